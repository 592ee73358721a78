// dist-auto-plan warns about plans whose tp (sp), cp or ep groups span
// nodes (issue 21, item 2) and, with cross-node=forbid, rejects them, in
// the search and in evaluate=. Nodes of 2 GPUs: tp=4 spans two nodes, a cp
// group of 2 ranks tp=2 apart spans two; dp=2,tp=2 keeps tp inside a node.
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 8 --seq 64 --vocab-multiple 64 -q -o %t.model.mlir
// RUN: shard-opt %t.model.mlir --dist-auto-plan="cluster=%S/Inputs/auto-plan-two-gpu-nodes.json gpus=4 evaluate=tp=4" -o /dev/null 2>&1 | FileCheck %s --check-prefix=TP
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%S/Inputs/auto-plan-two-gpu-nodes.json gpus=4 evaluate=tp=4 cross-node=forbid" -o /dev/null 2>&1 | FileCheck %s --check-prefix=TP-FORBID
// RUN: shard-opt %t.model.mlir --dist-auto-plan="cluster=%S/Inputs/auto-plan-two-gpu-nodes.json gpus=4 evaluate=dp=2,tp=2,sp=1 cross-node=forbid" -o /dev/null 2>&1 | FileCheck %s --check-prefix=INSIDE
// RUN: shard-opt %t.model.mlir --dist-auto-plan="cluster=%S/Inputs/auto-plan-two-gpu-nodes.json gpus=8 evaluate=dp=2,cp=2,tp=2 format=json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CP-JSON
// RUN: shard-opt %t.model.mlir --dist-auto-plan="cluster=%S/Inputs/auto-plan-two-gpu-nodes.json gpus=8 cross-node=forbid recompute=none zero=0,1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SEARCH
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%S/Inputs/auto-plan-two-gpu-nodes.json gpus=4 cross-node=maybe" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// The one-node CPU cluster has no node boundary: nothing to warn about.
// RUN: shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=4 evaluate=tp=4" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ONENODE

// TP: warning: dist-auto-plan: the evaluated plan relies on groups that span nodes: tp group of 4 consecutive ranks spans nodes of 2 GPUs (cross-node=forbid rejects such plans)
// TP: 4 GPUs (2 nodes), global batch 8
// TP: evaluated plan: pp=1,dp=1,cp=1,tp=4,
// TP: cross-node groups (their collectives use the inter-node link; cross-node=forbid rejects such plans):
// TP-NEXT: rank 1: tp group of 4 consecutive ranks spans nodes of 2 GPUs
// TP-NEXT: warning: the chosen plan relies on 1 group(s) spanning nodes (above)

// TP-FORBID: error: dist-auto-plan: evaluate=tp=4 is invalid: tp group of 4 consecutive ranks spans nodes of 2 GPUs (cross-node=forbid)
// TP-FORBID-NOT: warning:
// TP-FORBID: no plan fits
// TP-FORBID: tp=4 pp=1 cp=1 {{ *}}invalid: tp group of 4 consecutive ranks spans nodes of 2 GPUs (cross-node=forbid)

// INSIDE-NOT: warning
// INSIDE-NOT: cross-node groups
// INSIDE: evaluated plan: pp=1,dp=2,cp=1,tp=2,sp=1,
// INSIDE-NOT: warning
// INSIDE-NOT: cross-node groups

// CP-JSON: warning: dist-auto-plan: the evaluated plan relies on groups that span nodes: cp group of 2 ranks 2 apart spans nodes of 2 GPUs
// CP-JSON: "cross_node_groups": [
// CP-JSON-NEXT: "cp group of 2 ranks 2 apart spans nodes of 2 GPUs"
// CP-JSON-NEXT: ]

// The search without cross-node groups: every tp, cp group inside a node
// (tp * cp <= 2); the families that need one are rejected as invalid.
// SEARCH-NOT: warning
// SEARCH: chosen plan: pp={{[0-9]+}},dp={{[0-9]+}},cp={{1,tp=[12]|2,tp=1}},
// SEARCH-NOT: cross-node groups
// SEARCH: rejected families
// SEARCH: tp=2 pp=1 cp=2 {{ *}}invalid: cp group of 2 ranks 2 apart spans nodes of 2 GPUs (cross-node=forbid)

// BAD: error: dist-auto-plan: option 'cross-node': unknown value 'maybe' (known: warn, forbid)

// ONENODE-NOT: warning
// ONENODE: evaluated plan: pp=1,dp=1,cp=1,tp=4,
// ONENODE-NOT: cross-node
