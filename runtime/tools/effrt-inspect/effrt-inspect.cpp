//===- effrt-inspect.cpp - Print and convert tensor files -----------------===//
//
//   effrt-inspect FILE
//     One line per array or tensor, tab-separated:
//       NAME  DTYPE  SHAPE  crc32=XXXXXXXX  sum=S  first=[a,b,c]
//     where crc32 is over the raw little-endian C-order bytes, S is the sum
//     of all elements as double and first lists up to three elements.
//     Lines starting with '#' describe the file (format, metadata).
//   effrt-inspect --write-safetensors OUT IN [--metadata KEY=VALUE]...
//   effrt-inspect --write-npz OUT IN [--compress]
//     Convert IN (any readable format) to OUT.
//   effrt-inspect --extract-section KIND:TARGET:NAME OUT IN.effx
//     Write the bytes of one section of an .effx to OUT, e.g.
//     device_code:cuda:kernels (a cuda step's fatbin, for cuobjdump) or
//     host_code:cuda:step (its host shared object, for nm). KIND is a name
//     of the "# section" lines; TARGET "-" when the section has none.
//   effrt-inspect --list-fatbin FILE
//     One line per image of a CUDA fatbin (FILE a .fatbin, or an .effx whose
//     device_code section is one): "elf sm_80 BYTES" or "ptx compute_90
//     BYTES", what cuobjdump --list-elf / --list-ptx would name, for machines
//     without cuobjdump. An ELF image must start with the ELF magic.
//
// FILE may be .npz, .npy, .safetensors, a .bin of uint16 tokens, or an
// .effx, whose tensors are its initial state entries (zeros where the file
// stores none) and whose sections are listed as lines
//   # section KIND TARGET NAME offset=O size=S crc32=XXXXXXXX required|optional
// (TARGET "-" when none). Errors are one line on stderr and exit status 1;
// usage errors exit 2.
//
//===----------------------------------------------------------------------===//

#include "effrt/Effx.h"
#include "effrt/Error.h"
#include "effrt/File.h"
#include "effrt/Npy.h"
#include "effrt/Npz.h"
#include "effrt/SafeTensors.h"
#include "effrt/TokenStream.h"

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

using namespace effrt;

namespace {
struct Contents {
  std::string format;
  NamedTensors tensors;
  Metadata metadata;
  std::vector<std::string> notes; // extra '#' lines
};
} // namespace

static bool endsWith(const std::string &s, const char *suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

static std::string baseName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  size_t dot = base.find_last_of('.');
  return dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
}

/// The format from the extension, else from the first bytes.
static std::string detectFormat(const std::string &path) {
  for (const char *ext : {".npz", ".npy", ".safetensors", ".bin", ".effx"})
    if (endsWith(path, ext))
      return ext + 1;
  SharedBytes bytes = mapFile(path);
  auto starts = [&](const char *magic, size_t n) {
    return bytes.size >= n && std::memcmp(bytes.data, magic, n) == 0;
  };
  if (starts("PK\x03\x04", 4) || starts("PK\x05\x06", 4))
    return "npz";
  if (starts("\x93NUMPY", 6))
    return "npy";
  if (starts("EFFX\r\n\x1a\n", 8))
    return "effx";
  if (bytes.size >= 9 && static_cast<char>(bytes.data[8]) == '{')
    return "safetensors";
  fail(path, ": unrecognized file format (expected .npz, .npy, .safetensors, "
             ".effx or a .bin of uint16 tokens)");
}

static void readEffx(const std::string &path, Contents &c) {
  EffxFile file = EffxFile::open(path);
  const EffxManifest &m = file.manifest();
  c.metadata["effx_version"] = std::to_string(file.version());
  c.metadata["model"] = m.model;
  c.metadata["target"] = m.target;
  for (const EffxSection &s : file.sections()) {
    char line[160];
    std::snprintf(line, sizeof line, " offset=%" PRIu64 " size=%" PRIu64
                  " crc32=%08x %s", s.offset, s.size, s.crc32,
                  s.required() ? "required" : "optional");
    c.notes.push_back("section " + effxSectionKindName(s.kind) + " " +
                      (s.target.empty() ? "-" : s.target) + " " + s.name +
                      line);
  }
  auto state = std::make_shared<std::vector<std::byte>>(m.stateBytes);
  file.copyInitialState(state->data());
  for (const EffxStateEntry &e : m.state)
    c.tensors.emplace_back(
        e.name, Tensor::view(e.dtype, e.shape, state->data() + e.offset, state));
}

static Contents readContents(const std::string &path) {
  Contents c;
  c.format = detectFormat(path);
  if (c.format == "npz") {
    c.tensors = NpzFile::open(path).readAll();
  } else if (c.format == "npy") {
    c.tensors.emplace_back(baseName(path), readNpy(path));
  } else if (c.format == "safetensors") {
    SafeTensorsFile file = SafeTensorsFile::open(path);
    c.tensors = file.readAll();
    c.metadata = file.metadata();
  } else if (c.format == "effx") {
    readEffx(path, c);
  } else {
    c.tensors.emplace_back("tokens", TokenStream::open(path).tensor());
  }
  return c;
}

/// Escapes control characters so every entry stays on its line.
static std::string printable(const std::string &s) {
  std::string out;
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

static std::string formatElement(const Tensor &t, int64_t i) {
  char buf[64];
  switch (t.dtype()) {
  case DType::F64:
    std::snprintf(buf, sizeof(buf), "%.17g", t.load<double>(i));
    break;
  case DType::F32:
  case DType::F16:
  case DType::BF16:
    std::snprintf(buf, sizeof(buf), "%.9g", t.elementAsDouble(i));
    break;
  case DType::I64:
    std::snprintf(buf, sizeof(buf), "%" PRId64, t.load<int64_t>(i));
    break;
  case DType::U64:
    std::snprintf(buf, sizeof(buf), "%" PRIu64, t.load<uint64_t>(i));
    break;
  default:
    std::snprintf(buf, sizeof(buf), "%.0f", t.elementAsDouble(i));
    break;
  }
  return buf;
}

/// Sum as double with Neumaier compensation, so the result hardly depends on
/// the order of summation (numpy sums pairwise).
static double sum(const Tensor &t) {
  double s = 0, c = 0;
  for (int64_t i = 0; i < t.numElements(); ++i) {
    double x = t.elementAsDouble(i);
    double u = s + x;
    if (std::fabs(s) >= std::fabs(x))
      c += (s - u) + x;
    else
      c += (x - u) + s;
    s = u;
  }
  return s + c;
}

static void inspect(const std::string &path) {
  Contents c = readContents(path);
  std::string out = "# " + c.format + ", " + std::to_string(c.tensors.size()) +
                    (c.tensors.size() == 1 ? " tensor\n" : " tensors\n");
  for (const auto &[key, value] : c.metadata)
    out += "# metadata " + printable(key) + "=" + printable(value) + "\n";
  for (const std::string &note : c.notes)
    out += "# " + printable(note) + "\n";
  for (const auto &[name, t] : c.tensors) {
    char crc[32], total[64];
    std::snprintf(crc, sizeof(crc), "crc32=%08x",
                  static_cast<unsigned>(crc32(t.data(), t.byteSize())));
    std::snprintf(total, sizeof(total), "sum=%.17g", sum(t));
    out += printable(name) + "\t" + std::string(dtypeName(t.dtype())) + "\t" +
           formatShape(t.shape()) + "\t" + crc + "\t" + total + "\tfirst=[";
    for (int64_t i = 0; i < std::min<int64_t>(3, t.numElements()); ++i)
      out += (i ? "," : "") + formatElement(t, i);
    out += "]\n";
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
}

/// Writes the section `spec` (KIND:TARGET:NAME) of the .effx `in` to `out`.
static void extractSection(const std::string &spec, const std::string &out,
                           const std::string &in) {
  size_t first = spec.find(':'), second = spec.find(':', first + 1);
  if (first == std::string::npos || second == std::string::npos)
    fail(spec, ": expected KIND:TARGET:NAME (e.g. device_code:cuda:kernels)");
  std::string kind = spec.substr(0, first);
  std::string target = spec.substr(first + 1, second - first - 1);
  std::string name = spec.substr(second + 1);
  if (target == "-")
    target.clear();
  EffxFile file = EffxFile::open(in);
  for (const EffxSection &s : file.sections()) {
    if (effxSectionKindName(s.kind) != kind || s.target != target ||
        s.name != name)
      continue;
    FILE *f = std::fopen(out.c_str(), "wb");
    if (!f)
      fail(out, ": cannot open for writing: ", std::strerror(errno));
    const std::byte *data = file.sectionData(s);
    bool ok = std::fwrite(data, 1, s.size, f) == s.size;
    ok = std::fclose(f) == 0 && ok;
    if (!ok)
      fail(out, ": cannot write");
    return;
  }
  fail(in, ": no section ", spec, " (effrt-inspect FILE lists them)");
}

/// Lists the images of the fatbin in `path` (or in an .effx's device code).
/// The container is what the toolkit's fatbinary writes: a 16-byte header
/// (magic 0xBA55ED50, u16 version, u16 header size, u64 bytes of entries),
/// then entries of a header (u16 kind: 1 PTX, 2 ELF; u16 version; u32
/// header size; u64 payload size; ...; u32 arch at byte 28, 80 for sm_80;
/// u64 flags at byte 40, 0x2000 or 0x8000 when the payload is compressed
/// (LZ4, zstd); u64 uncompressed size at byte 56) and a payload. Sizes
/// printed are uncompressed.
static void listFatbin(const std::string &path) {
  SharedBytes file = mapFile(path);
  const std::byte *data = file.data;
  uint64_t size = file.size;
  std::optional<EffxFile> effx;
  if (size >= 8 && std::memcmp(data, "EFFX\r\n\x1a\n", 8) == 0) {
    effx = EffxFile::open(path);
    const EffxSection *section = nullptr;
    for (const EffxSection &s : effx->sections())
      if (s.kind == EffxSectionKind::DeviceCode)
        section = &s;
    if (!section)
      fail(path, ": no device_code section");
    data = effx->sectionData(*section);
    size = section->size;
  }
  auto read = [&](uint64_t at, auto value) {
    if (at + sizeof(value) > size)
      fail(path, ": truncated fatbin (", size, " bytes)");
    std::memcpy(&value, data + at, sizeof(value));
    return value;
  };
  if (read(0, uint32_t()) != 0xBA55ED50u)
    fail(path, ": not a CUDA fatbin (no 0xBA55ED50 magic)");
  uint64_t at = read(6, uint16_t());
  uint64_t end = at + read(8, uint64_t());
  if (end > size)
    fail(path, ": truncated fatbin (", size, " bytes, header says ", end, ")");
  while (at < end) {
    uint16_t kind = read(at, uint16_t());
    uint32_t headerSize = read(at + 4, uint32_t());
    uint64_t payload = read(at + 8, uint64_t());
    uint32_t arch = read(at + 28, uint32_t());
    if (headerSize < 32 || at + headerSize + payload > end)
      fail(path, ": bad fatbin entry at byte ", at);
    uint64_t flags = headerSize >= 64 ? read(at + 40, uint64_t()) : 0;
    bool compressed = (flags & 0xA000) != 0;
    uint64_t bytes = compressed ? read(at + 56, uint64_t()) : payload;
    if (kind == 2) {
      if (!compressed &&
          (payload < 4 || std::memcmp(data + at + headerSize, "\x7f" "ELF", 4)))
        fail(path, ": the ELF image at byte ", at, " is not an ELF file");
      std::printf("elf sm_%u %" PRIu64 "\n", arch, bytes);
    } else if (kind == 1) {
      std::printf("ptx compute_%u %" PRIu64 "\n", arch, bytes);
    } else {
      std::printf("kind%u sm_%u %" PRIu64 "\n", kind, arch, bytes);
    }
    at += headerSize + payload;
  }
}

static int usage(const char *message) {
  std::fprintf(stderr,
               "effrt-inspect: %s\n"
               "usage: effrt-inspect FILE\n"
               "       effrt-inspect --write-safetensors OUT IN "
               "[--metadata KEY=VALUE]...\n"
               "       effrt-inspect --write-npz OUT IN [--compress]\n"
               "       effrt-inspect --extract-section KIND:TARGET:NAME OUT "
               "IN.effx\n"
               "       effrt-inspect --list-fatbin FILE\n",
               message);
  return 2;
}

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() == 1 && (args[0] == "-h" || args[0] == "--help")) {
      usage("print or convert .npz, .npy, .safetensors, .effx and token files");
      return 0;
    }
    if (args.size() == 1 && args[0].rfind("--", 0) != 0) {
      inspect(args[0]);
      return 0;
    }
    if (args.size() >= 3 && args[0] == "--write-safetensors") {
      Metadata metadata;
      for (size_t i = 3; i < args.size(); i += 2) {
        if (args[i] != "--metadata" || i + 1 >= args.size() ||
            args[i + 1].find('=') == std::string::npos)
          return usage("expected --metadata KEY=VALUE");
        const std::string &kv = args[i + 1];
        size_t eq = kv.find('=');
        metadata[kv.substr(0, eq)] = kv.substr(eq + 1);
      }
      Contents c = readContents(args[2]);
      for (const auto &[key, value] : c.metadata)
        metadata.emplace(key, value);
      writeSafeTensors(args[1], c.tensors, metadata);
      return 0;
    }
    if ((args.size() == 3 || args.size() == 4) && args[0] == "--write-npz") {
      NpzWriteOptions options;
      if (args.size() == 4) {
        if (args[3] != "--compress")
          return usage("unexpected argument after IN");
        options.compress = true;
      }
      writeNpz(args[1], readContents(args[2]).tensors, options);
      return 0;
    }
    if (args.size() == 2 && args[0] == "--list-fatbin") {
      listFatbin(args[1]);
      return 0;
    }
    if (args.size() == 4 && args[0] == "--extract-section") {
      extractSection(args[1], args[2], args[3]);
      return 0;
    }
    return usage("bad arguments");
  } catch (const Error &e) {
    std::fprintf(stderr, "effrt-inspect: %s\n", e.what());
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "effrt-inspect: out of memory\n");
  } catch (const std::exception &e) {
    std::fprintf(stderr, "effrt-inspect: internal error: %s\n", e.what());
  }
  return 1;
}
