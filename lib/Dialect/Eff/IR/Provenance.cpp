//===- Provenance.cpp - why a value of the training step exists -----------===//

#include "effopt/Dialect/Eff/IR/Provenance.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace effopt::eff {

static constexpr llvm::StringLiteral kTagPrefix = "eff.";

StringRef provenanceName(Provenance provenance) {
  switch (provenance) {
  case Provenance::Forward:
    return "forward";
  case Provenance::Saved:
    return "saved";
  case Provenance::Backward:
    return "backward";
  case Provenance::Gradient:
    return "gradient";
  case Provenance::Optimizer:
    return "optimizer";
  case Provenance::Recomputed:
    return "recomputed";
  case Provenance::Cast:
    return "cast";
  case Provenance::Workspace:
    return "workspace";
  }
  llvm_unreachable("unknown provenance");
}

std::optional<Provenance> parseProvenance(StringRef name) {
  for (Provenance p :
       {Provenance::Forward, Provenance::Saved, Provenance::Backward,
        Provenance::Gradient, Provenance::Optimizer, Provenance::Recomputed,
        Provenance::Cast, Provenance::Workspace})
    if (provenanceName(p) == name)
      return p;
  return std::nullopt;
}

/// The tag of a location that is exactly a tagged FusedLoc.
static std::optional<Provenance> tagOf(Location loc) {
  auto fused = dyn_cast<FusedLoc>(loc);
  if (!fused)
    return std::nullopt;
  auto metadata = dyn_cast_if_present<StringAttr>(fused.getMetadata());
  if (!metadata || !metadata.getValue().starts_with(kTagPrefix))
    return std::nullopt;
  return parseProvenance(metadata.getValue().drop_front(kTagPrefix.size()));
}

/// `loc` without its tag.
static Location untagged(Location loc) {
  if (!tagOf(loc))
    return loc;
  ArrayRef<Location> inner = cast<FusedLoc>(loc).getLocations();
  return inner.size() == 1 ? inner.front()
                           : FusedLoc::get(loc.getContext(), inner);
}

Location withProvenance(Location loc, Provenance provenance) {
  Location base = untagged(loc);
  if (provenance == Provenance::Forward)
    return base;
  MLIRContext *context = loc.getContext();
  auto tag = StringAttr::get(context, kTagPrefix + provenanceName(provenance));
  return FusedLoc::get({base}, tag, context);
}

Provenance provenanceOf(Location loc) {
  if (std::optional<Provenance> tag = tagOf(loc))
    return *tag;
  // Inlining wraps locations in call sites; folding fuses several.
  if (auto callSite = dyn_cast<CallSiteLoc>(loc))
    return provenanceOf(callSite.getCallee());
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (Provenance p = provenanceOf(inner); p != Provenance::Forward)
        return p;
  return Provenance::Forward;
}

std::string nodeNameOf(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations()) {
      std::string name = nodeNameOf(inner);
      if (!name.empty())
        return name;
    }
  if (auto callSite = dyn_cast<CallSiteLoc>(loc))
    return nodeNameOf(callSite.getCallee());
  return "";
}

} // namespace effopt::eff
