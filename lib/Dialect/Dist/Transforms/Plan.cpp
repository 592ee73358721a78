//===- Plan.cpp - Parallelism plans ---------------------------------------===//

#include "autoshard/Dialect/Dist/Transforms/Plan.h"

#include "autoshard/Dialect/Dist/IR/DistAttrNames.h"
#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Dist/IR/MeshLimits.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace autoshard::dist;

namespace {

llvm::Error planError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

int64_t *intField(Plan &plan, StringRef key) {
  if (key == "pp")
    return &plan.pp;
  if (key == "dp")
    return &plan.dp;
  if (key == "cp")
    return &plan.cp;
  if (key == "tp")
    return &plan.tp;
  if (key == "sp")
    return &plan.sp;
  if (key == "zero")
    return &plan.zero;
  if (key == "ep")
    return &plan.ep;
  if (key == "etp")
    return &plan.etp;
  if (key == "mb")
    return &plan.mb;
  if (key == "vpp")
    return &plan.vpp;
  return nullptr;
}

/// The values of `cp_layout`; an error naming the value found otherwise.
llvm::Error checkCpLayout(StringRef value, StringRef where) {
  if (value == "contiguous" || value == "zigzag")
    return llvm::Error::success();
  return planError(
      llvm::formatv("{0}: cp_layout must be contiguous or zigzag, found '{1}'",
                    where, value));
}

constexpr const char *kKnownKeys =
    "pp, dp, cp, tp, sp, zero, ep, etp, mb, schedule, vpp, recompute, "
    "cp_attention, cp_layout";

} // namespace

llvm::Expected<Plan> Plan::parse(StringRef text, bool onlySupported) {
  Plan plan;
  llvm::StringSet<> seen;
  SmallVector<StringRef> items;
  text.split(items, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/true);
  if (text.trim().empty())
    items.clear();
  for (StringRef item : items) {
    item = item.trim();
    auto [key, value] = item.split('=');
    key = key.trim();
    value = value.trim();
    if (item.empty() || !item.contains('=') || key.empty())
      return planError(llvm::formatv(
          "plan: expected 'key=value', found '{0}' (in \"{1}\")", item, text));
    if (!seen.insert(key).second)
      return planError(llvm::formatv("plan: key '{0}' given twice", key));
    if (key == "schedule") {
      if (value != "gpipe" && value != "1f1b" && value != "interleaved" &&
          value != "interleaved-1f1b" && value != "looped-bfs" &&
          value != "zb-h1" && value != "zb-v")
        return planError(llvm::formatv(
            "plan: unknown schedule '{0}' (known: gpipe, 1f1b, interleaved, "
            "looped-bfs, zb-h1, zb-v)",
            value));
      plan.schedule = value == "interleaved-1f1b" ? "interleaved" : value.str();
      continue;
    }
    if (key == "recompute") {
      if (value != "none" && value != "selective" && value != "full")
        return planError(llvm::formatv(
            "plan: recompute must be none, selective or full, found '{0}'",
            value));
      plan.recompute = value.str();
      continue;
    }
    if (key == "cp_attention") {
      if (value != "ring" && value != "ulysses")
        return planError(llvm::formatv(
            "plan: cp_attention must be ring or ulysses, found '{0}'", value));
      plan.cpAttention = value.str();
      continue;
    }
    if (key == "cp_layout") {
      if (llvm::Error err = checkCpLayout(value, "plan"))
        return std::move(err);
      plan.cpLayout = value.str();
      continue;
    }
    int64_t *field = intField(plan, key);
    if (!field)
      return planError(llvm::formatv(
          "plan: unknown key '{0}' (value '{1}'; known keys: {2})", key, value,
          kKnownKeys));
    int64_t number;
    if (value.getAsInteger(10, number))
      return planError(llvm::formatv(
          "plan: {0} expects an integer, found '{1}'", key, value));
    *field = number;
    if (key == "sp") {
      if (number != 0 && number != 1)
        return planError(
            llvm::formatv("plan: sp must be 0 or 1, found {0}", number));
    } else if (key == "zero") {
      if (number < 0 || number > 3)
        return planError(
            llvm::formatv("plan: zero must be in 0..3, found {0}", number));
    } else if (number < 1) {
      return planError(
          llvm::formatv("plan: {0} must be >= 1, found {1}", key, number));
    }
  }
  // Stages per rank: the interleaved and looped schedules take any vpp
  // (interleaved needs >= 2), ZB-V exactly two (its V shape), the others one.
  bool loop = plan.schedule == "interleaved" || plan.schedule == "looped-bfs";
  if (plan.schedule == "interleaved" && plan.vpp < 2)
    return planError(llvm::formatv(
        "plan: schedule=interleaved needs vpp >= 2 model chunks per rank, "
        "found vpp={0}",
        plan.vpp));
  if (plan.schedule == "zb-v" && plan.vpp != 2)
    return planError(llvm::formatv(
        "plan: schedule=zb-v runs two model chunks per rank (its V shape): "
        "set vpp=2, found vpp={0}",
        plan.vpp));
  if (!loop && plan.schedule != "zb-v" && plan.vpp != 1)
    return planError(llvm::formatv(
        "plan: vpp={0} needs schedule=interleaved, looped-bfs or zb-v "
        "(schedule={1} runs one stage per rank)",
        plan.vpp, plan.schedule));
  if (plan.vpp > 1 && plan.pp == 1)
    return planError(llvm::formatv(
        "plan: vpp={0} needs pp > 1 (virtual stages are per pipeline rank)",
        plan.vpp));
  // Expert tensor parallelism reuses the tp ranks whole (no axis split).
  if (plan.etp != 1 && plan.etp != plan.tp)
    return planError(llvm::formatv(
        "plan: etp={0} must be 1 (whole experts on every rank) or tp={1} "
        "(each expert split over the tp ranks)",
        plan.etp, plan.tp));
  // Expert parallelism folds over the tp x cp x dp ranks, minor first
  // (DESIGN.md §5, Megatron-Core's MoE parallel folding): it adds no ranks,
  // takes every tp rank (etp = 1) and every cp rank of a sequence whole
  // (the MoE layers see whole sequences: capacity and drop order are per
  // sequence), and the rest of the group from dp. It never spans pp ranks,
  // which hold other layers.
  if (plan.ep > 1) {
    int64_t minor = plan.getExpertParallelOverTp() * plan.cp;
    // The planner scores any group inside the folded ranks analytically.
    if (!onlySupported && (minor * plan.dp) % plan.ep != 0)
      return planError(llvm::formatv(
          "plan: ep={0} must divide {1}*dp={2} (expert parallelism folds "
          "over the {3} ranks)",
          plan.ep, minor, minor * plan.dp,
          plan.getExpertParallelOverTp() > 1 ? "tp x cp x dp" : "cp x dp"));
    if (onlySupported &&
        (plan.ep % minor != 0 || plan.dp % (plan.ep / minor) != 0)) {
      std::string hint =
          plan.tp > 1 && plan.etp == 1
              ? llvm::formatv("; or etp={0}: each expert split over the tp "
                              "ranks, which then leave the ep group",
                              plan.tp)
                    .str()
              : "";
      if (minor == 1)
        return planError(llvm::formatv(
            "plan: ep={0} must divide dp={1} (expert parallelism folds over "
            "the data-parallel ranks, never over pp){2}",
            plan.ep, plan.dp, hint));
      std::string taken =
          plan.getExpertParallelOverTp() > 1 && plan.cp > 1
              ? llvm::formatv("tp and cp rank (tp*cp={0})", minor).str()
          : plan.cp > 1 ? llvm::formatv("cp rank (cp={0})", minor).str()
                        : llvm::formatv("tp rank (tp={0})", minor).str();
      return planError(llvm::formatv(
          "plan: ep={0} must be {1} times a divisor of dp={2}: the ep group "
          "takes every {3}, then ep/{1} of the dp ranks{4}",
          plan.ep, minor, plan.dp, taken, hint));
    }
  }
  if (plan.cpAttention == "ulysses" && plan.cp == 1)
    return planError("plan: cp_attention=ulysses needs cp > 1 (the all-to-alls "
                     "run over the cp axis), found cp=1");
  if (plan.cpLayout == "zigzag" && plan.cp == 1)
    return planError("plan: cp_layout=zigzag needs cp > 1 (it balances the "
                     "causal work of the cp ranks), found cp=1");
  if (plan.cpLayout == "zigzag" && plan.cpAttention != "ring")
    return planError(llvm::formatv(
        "plan: cp_layout=zigzag balances ring attention (cp_attention=ring); "
        "cp_attention={0} gathers the whole sequence, found both",
        plan.cpAttention));
  if (plan.sp == 1 && plan.tp == 1)
    return planError("plan: sp=1 needs tp > 1 (sequence parallelism runs on "
                     "the tp axis), found tp=1");
  if (plan.getWorldSize() <= 0 ||
      plan.getWorldSize() / plan.tp / plan.cp / plan.dp != plan.pp)
    return planError("plan: the world size does not fit in int64");
  if (plan.getWorldSize() > kMaxMeshDevices)
    return planError(llvm::formatv(
        "plan: the world size (pp x dp x cp x tp) must be at most {0} (2^24, "
        "the most devices a dist.mesh may have), found {1}",
        kMaxMeshDevices, plan.getWorldSize()));
  return plan;
}

StringRef Plan::getAxisName(AxisRole role) {
  switch (role) {
  case AxisRole::Pipeline:
    return "pp";
  case AxisRole::Data:
    return "dp";
  case AxisRole::Expert:
    return "ep";
  case AxisRole::Context:
    return "cp";
  case AxisRole::Tensor:
    return "tp";
  }
  llvm_unreachable("unknown axis role");
}

SmallVector<Plan::MeshAxis> Plan::getMeshAxes() const {
  SmallVector<MeshAxis> axes;
  for (auto [role, size] :
       {std::pair<AxisRole, int64_t>{AxisRole::Pipeline, pp},
        {AxisRole::Data, getExpertDataParallel()},
        {AxisRole::Expert, getExpertParallelOverDp()},
        {AxisRole::Context, cp},
        {AxisRole::Tensor, tp}})
    if (size > 1)
      axes.push_back({getAxisName(role), size, role});
  return axes;
}

DictionaryAttr Plan::toAttr(MLIRContext *context) const {
  Builder b(context);
  SmallVector<NamedAttribute> entries;
  for (StringRef key :
       {"pp", "dp", "cp", "tp", "sp", "zero", "ep", "mb", "vpp"})
    entries.push_back(b.getNamedAttr(
        key, b.getI64IntegerAttr(*intField(const_cast<Plan &>(*this), key))));
  entries.push_back(b.getNamedAttr("schedule", b.getStringAttr(schedule)));
  entries.push_back(b.getNamedAttr("recompute", b.getStringAttr(recompute)));
  entries.push_back(
      b.getNamedAttr("cp_attention", b.getStringAttr(cpAttention)));
  // Only when it departs from the default (modules compiled before the key
  // existed read the same).
  if (cpLayout != "contiguous")
    entries.push_back(b.getNamedAttr("cp_layout", b.getStringAttr(cpLayout)));
  if (etp != 1)
    entries.push_back(b.getNamedAttr("etp", b.getI64IntegerAttr(etp)));
  return b.getDictionaryAttr(entries);
}

llvm::Expected<Plan> Plan::fromAttr(DictionaryAttr attr) {
  Plan plan;
  for (NamedAttribute entry : attr) {
    StringRef key = entry.getName().getValue();
    if (int64_t *field = intField(plan, key)) {
      auto value = dyn_cast<IntegerAttr>(entry.getValue());
      if (!value)
        return planError(
            llvm::formatv("dist.plan: {0} is not an integer", key));
      *field = value.getInt();
    } else if (key == "schedule" || key == "recompute" ||
               key == "cp_attention" || key == "cp_layout") {
      auto value = dyn_cast<StringAttr>(entry.getValue());
      if (!value)
        return planError(llvm::formatv("dist.plan: {0} is not a string", key));
      if (key == "cp_layout")
        if (llvm::Error err = checkCpLayout(value.getValue(), "dist.plan"))
          return std::move(err);
      (key == "schedule"       ? plan.schedule
       : key == "recompute"    ? plan.recompute
       : key == "cp_attention" ? plan.cpAttention
                               : plan.cpLayout) = value.str();
    } else {
      return planError(llvm::formatv("dist.plan: unknown key '{0}'", key));
    }
  }
  return plan;
}

mlir::FailureOr<std::optional<Plan>> Plan::fromModule(ModuleOp module,
                                                      StringRef pass) {
  auto attr = module->getAttrOfType<DictionaryAttr>(kPlanAttrName);
  if (!attr)
    return std::optional<Plan>();
  llvm::Expected<Plan> plan = fromAttr(attr);
  if (!plan) {
    module.emitError() << pass << ": " << llvm::toString(plan.takeError());
    return mlir::failure();
  }
  return std::optional<Plan>(std::move(*plan));
}

std::string Plan::str() const {
  std::string text =
      llvm::formatv("pp={0},dp={1},cp={2},tp={3},sp={4},zero={5},ep={6},"
                    "mb={7},schedule={8},vpp={9},recompute={10}",
                    pp, dp, cp, tp, sp, zero, ep, mb, schedule, vpp, recompute)
          .str();
  // Only when it departs from the default, so that plans printed before
  // the key existed still read the same.
  if (cpAttention != "ring")
    text += ",cp_attention=" + cpAttention;
  if (cpLayout != "contiguous")
    text += ",cp_layout=" + cpLayout;
  if (etp != 1)
    text += ",etp=" + std::to_string(etp);
  return text;
}
