//===- CudaManifest.cpp - What a cuda .effx asks of the GPU ---------------===//

#include "CudaManifest.h"

#include "effrt/Effx.h"
#include "effrt/Error.h"

#include <nlohmann/json.hpp>

using namespace effrt;
using namespace effrt::cuda;
using json = nlohmann::json;

std::optional<CudaArch> cuda::parseCudaArch(std::string_view name) {
  CudaArch arch;
  arch.name = std::string(name);
  std::string_view rest;
  if (name.rfind("sm_", 0) == 0) {
    rest = name.substr(3);
  } else if (name.rfind("compute_", 0) == 0) {
    rest = name.substr(8);
    arch.ptx = true;
  } else {
    return std::nullopt;
  }
  if (!rest.empty() && (rest.back() == 'a' || rest.back() == 'f')) {
    arch.specific = true;
    rest.remove_suffix(1);
  }
  // Two or three digits: the last is the minor version ("sm_100" is 10.0).
  if (rest.size() < 2 || rest.size() > 3)
    return std::nullopt;
  int value = 0;
  for (char c : rest) {
    if (c < '0' || c > '9')
      return std::nullopt;
    value = value * 10 + (c - '0');
  }
  arch.major = value / 10;
  arch.minor = value % 10;
  if (arch.major == 0)
    return std::nullopt;
  return arch;
}

bool CudaManifest::covers(int major, int minor) const {
  for (const CudaArch &a : archs)
    if (a.major == major && (a.specific ? a.minor == minor : a.minor <= minor))
      return true;
  if (ptx && !ptx->specific &&
      (ptx->major < major || (ptx->major == major && ptx->minor <= minor)))
    return true;
  if (ptx && ptx->specific && ptx->major == major && ptx->minor == minor)
    return true;
  return false;
}

std::string CudaManifest::describe() const {
  std::string out;
  for (const CudaArch &a : archs)
    out += (out.empty() ? "" : ", ") + a.name;
  if (ptx)
    out += (out.empty() ? "" : ", ") + ptx->name;
  return out.empty() ? "none" : out;
}

CudaManifest cuda::readCudaManifest(const std::string &path,
                                    const EffxManifest &manifest) {
  json root = json::parse(manifest.json, nullptr, /*allow_exceptions=*/false);
  if (!root.is_object())
    fail(path, ": manifest: not a JSON object");
  auto shown = [](const json &v) {
    std::string text = v.dump();
    return text.size() > 60 ? text.substr(0, 57) + "..." : text;
  };
  CudaManifest m;
  auto archs = root.find("cuda_archs");
  if (archs == root.end())
    fail(path, ": manifest: 'cuda_archs' is missing (the GPU architectures "
               "of the device code, e.g. [\"sm_80\", \"sm_90\"])");
  bool valid = archs->is_array();
  if (valid)
    for (const json &a : *archs) {
      std::optional<CudaArch> arch =
          a.is_string() ? parseCudaArch(a.get<std::string>()) : std::nullopt;
      if (!arch || arch->ptx) {
        valid = false;
        break;
      }
      m.archs.push_back(*arch);
    }
  if (!valid)
    fail(path,
         ": manifest: 'cuda_archs' must be an array of names like "
         "\"sm_90\" (got ",
         shown(*archs), ")");
  if (auto ptx = root.find("cuda_ptx"); ptx != root.end() && !ptx->is_null()) {
    std::optional<CudaArch> arch = ptx->is_string()
                                       ? parseCudaArch(ptx->get<std::string>())
                                       : std::nullopt;
    if (!arch || !arch->ptx)
      fail(path,
           ": manifest: 'cuda_ptx' must be a name like \"compute_90\" "
           "(got ",
           shown(*ptx), ")");
    m.ptx = *arch;
  }
  if (m.archs.empty() && !m.ptx)
    fail(path, ": manifest: the device code is for no GPU ('cuda_archs' is "
               "empty and there is no 'cuda_ptx')");
  // Byte counts the runtime allocates at load: 0 when absent.
  auto bytesField = [&](const char *key) -> uint64_t {
    auto v = root.find(key);
    if (v == root.end())
      return 0;
    if (!v->is_number_unsigned() && !(v->is_number_integer() && *v >= 0))
      fail(path, ": manifest: '", key,
           "' must be a non-negative integer (got ", shown(*v), ")");
    return v->get<uint64_t>();
  };
  m.workspaceBytes = bytesField("workspace_bytes");
  m.hostStagingBytes = bytesField("host_staging_bytes");
  if (auto t = root.find("allow_tf32"); t != root.end()) {
    if (!t->is_boolean())
      fail(path, ": manifest: 'allow_tf32' must be true or false (got ",
           shown(*t), ")");
    m.allowTf32 = t->get<bool>();
  }
  return m;
}
