//===- UnitTestMain.cpp - Runs the registered effrt unit tests ------------===//

#include "UnitTest.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <iterator>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace effrt::test;

std::vector<TestCase> &effrt::test::registry() {
  static std::vector<TestCase> tests;
  return tests;
}

void effrt::test::checkFailed(const char *file, int line,
                              const std::string &what) {
  const char *base = std::strrchr(file, '/');
  throw CheckFailure{std::string(base ? base + 1 : file) + ":" +
                     std::to_string(line) + ": " + what};
}

static void removeTree(const std::string &path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0)
    return;
  if (S_ISDIR(st.st_mode)) {
    for (const std::string &name : listDir(path))
      removeTree(path + "/" + name);
    ::rmdir(path.c_str());
  } else {
    ::unlink(path.c_str());
  }
}

namespace {
struct TempDir {
  std::string path;
  TempDir() {
    const char *base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base && *base ? base : "/tmp") + "/effrt-unit-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) {
      std::perror("mkdtemp");
      std::exit(1);
    }
    path = buf.data();
  }
  ~TempDir() { removeTree(path); }
};
} // namespace

const std::string &effrt::test::tempDir() {
  static TempDir dir;
  return dir.path;
}

std::string effrt::test::tempPath(const std::string &name) {
  return tempDir() + "/" + name;
}

std::vector<std::byte> effrt::test::readFileBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    checkFailed(__FILE__, __LINE__, "cannot read " + path);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  if (!chars.empty())
    std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

void effrt::test::writeFileBytes(const std::string &path,
                                 const std::vector<std::byte> &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out)
    checkFailed(__FILE__, __LINE__, "cannot write " + path);
}

bool effrt::test::fileExists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::vector<std::string> effrt::test::listDir(const std::string &path) {
  std::vector<std::string> names;
  if (DIR *dir = ::opendir(path.c_str())) {
    while (dirent *e = ::readdir(dir))
      if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, ".."))
        names.push_back(e->d_name);
    ::closedir(dir);
  }
  return names;
}

int main(int argc, char **argv) {
  const char *filter = argc > 1 ? argv[1] : "";
  int passed = 0, failed = 0;
  for (const TestCase &test : registry()) {
    if (!std::strstr(test.name, filter))
      continue;
    std::string failure;
    try {
      test.run();
    } catch (const CheckFailure &f) {
      failure = f.message;
    } catch (const std::exception &e) {
      failure = std::string("unexpected exception: ") + e.what();
    }
    if (failure.empty()) {
      ++passed;
      std::printf("PASS %s\n", test.name);
    } else {
      ++failed;
      std::printf("FAIL %s: %s\n", test.name, failure.c_str());
    }
    std::fflush(stdout);
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed || passed == 0 ? 1 : 0;
}
