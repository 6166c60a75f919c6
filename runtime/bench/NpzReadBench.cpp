//===- NpzReadBench.cpp - effrt's .npz reader against libzip --------------===//
//
//   effrt-npz-bench effrt|libzip FILE.npz
//
// Reads every array of FILE.npz the way effrun's data loader does (all of
// them, CRCs checked) with effrt::NpzFile, or with libzip (zip_fopen_index +
// zip_fread into owned buffers, libzip checking the CRCs), then touches one
// byte per page of every array. Prints one line of key=value figures: wall
// and CPU seconds of the read, peak and final resident memory and how much
// of it is anonymous or file-backed. bench/npz_read.py drives it.
//
//===----------------------------------------------------------------------===//

#include "effrt/Error.h"
#include "effrt/Npy.h"
#include "effrt/Npz.h"

#include <zip.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include <sys/resource.h>

using namespace effrt;

/// Every array, read through libzip.
static NamedTensors readWithLibzip(const std::string &path) {
  int code = 0;
  zip_t *z = zip_open(path.c_str(), ZIP_RDONLY, &code);
  if (!z) {
    zip_error_t e;
    zip_error_init_with_code(&e, code);
    std::string message = zip_error_strerror(&e);
    zip_error_fini(&e);
    fail(path, ": ", message);
  }
  NamedTensors out;
  zip_int64_t n = zip_get_num_entries(z, 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    zip_stat_index(z, static_cast<zip_uint64_t>(i), 0, &st);
    std::string what = path + ": " + st.name;
    zip_file_t *f = zip_fopen_index(z, static_cast<zip_uint64_t>(i), 0);
    if (!f)
      fail(what, ": ", zip_strerror(z));
    auto readExactly = [&](void *p, uint64_t size) {
      if (zip_fread(f, p, size) != static_cast<zip_int64_t>(size))
        fail(what, ": ", zip_file_strerror(f));
    };
    std::byte preamble[kNpyMaxPreambleSize];
    size_t preambleSize = 10;
    readExactly(preamble, 10);
    if (preamble[6] == std::byte{2} || preamble[6] == std::byte{3}) {
      readExactly(preamble + 10, 2);
      preambleSize = 12;
    }
    NpyPreamble p = parseNpyPreamble(preamble, preambleSize, what);
    std::string dict(static_cast<size_t>(p.headerLength), '\0');
    readExactly(dict.data(), dict.size());
    NpyHeader h = parseNpyHeaderDict(dict, p, what);
    Tensor t = Tensor::allocate(h.dtype, h.shape);
    readExactly(t.mutableData(), h.dataSize);
    char extra;
    // Reading on to the end makes libzip check the CRC.
    if (zip_fread(f, &extra, 1) != 0)
      fail(what, ": ", zip_file_strerror(f));
    zip_fclose(f);
    out.emplace_back(st.name, std::move(t));
  }
  zip_discard(z);
  return out;
}

/// "RssAnon" or "RssFile" from /proc/self/status, in bytes.
static unsigned long long statusBytes(const char *key) {
  std::FILE *f = std::fopen("/proc/self/status", "r");
  char line[256];
  unsigned long long kb = 0;
  while (f && std::fgets(line, sizeof line, f))
    if (std::strncmp(line, key, std::strlen(key)) == 0)
      std::sscanf(line + std::strlen(key) + 1, "%llu", &kb);
  if (f)
    std::fclose(f);
  return kb * 1024;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: effrt-npz-bench effrt|libzip FILE.npz\n");
    return 2;
  }
  std::string mode = argv[1], path = argv[2];
  try {
    auto t0 = std::chrono::steady_clock::now();
    NamedTensors arrays;
    if (mode == "effrt")
      arrays = NpzFile::open(path).readAll();
    else if (mode == "libzip")
      arrays = readWithLibzip(path);
    else
      fail("unknown mode '", mode, "'");
    double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    struct rusage ru;
    ::getrusage(RUSAGE_SELF, &ru);
    double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
                 ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    unsigned long long bytes = 0, touched = 0;
    for (const auto &[name, t] : arrays) {
      bytes += t.byteSize();
      for (size_t i = 0; i < t.byteSize(); i += 4096)
        touched += static_cast<unsigned char>(t.data()[i]);
    }
    ::getrusage(RUSAGE_SELF, &ru);
    std::printf("mode=%s arrays=%zu bytes=%llu wall_s=%.3f cpu_s=%.3f "
                "peak_rss=%llu rss_anon=%llu rss_file=%llu touched=%llu\n",
                mode.c_str(), arrays.size(), bytes, wall, cpu,
                static_cast<unsigned long long>(ru.ru_maxrss) * 1024,
                statusBytes("RssAnon:"), statusBytes("RssFile:"), touched);
  } catch (const Error &e) {
    std::fprintf(stderr, "effrt-npz-bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
