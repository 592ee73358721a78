// dist-auto-plan format=html: the top candidates as stacked bars of step
// time (compute, exposed communication, bubble, optimizer) and of memory,
// their table, and why each rejected family lost; the chosen plan is the
// text report's.
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 8 --seq 64 --vocab-multiple 8 -q -o %t.model.mlir
// RUN: shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=4 top=4 recompute=none format=html report=%t.html" -o %t.out.mlir
// RUN: %python -m autoshard.report --summary %t.html | FileCheck %s
// RUN: FileCheck %s --check-prefix=HTML < %t.html
// RUN: FileCheck %s --check-prefix=ATTR < %t.out.mlir
// CHECK: sections candidates predicted-step rejected
// CHECK: bars candidate-time kind=time bars=4
// CHECK-NEXT:   bar 0: compute {{(exposed )?}}{{(bubbletime )?}}optimizer
// CHECK: bars candidate-memory kind=memory bars=4
// CHECK-NEXT:   bar 0: param act
// HTML: <title>dist-auto-plan: nanogpt-shakespeare-char-cpu</title>
// HTML: Chosen plan: <code id="chosen">[[PLAN:pp=[^<]*]]</code>
// HTML: <line class="limit"
// HTML: <tr><td class="num">1</td><td><code>[[PLAN]]</code></td>
// HTML: <table class="rejected">
// HTML: <tr><td><code>tp=
// HTML: search: {{[0-9]+}} candidates
// ATTR: dist.auto_plan = "[[PLAN:pp=[^"]*]]"
// With a pipeline, the chosen plan's predicted step as a timeline, read off
// the planner's own trace of it: 2 pipeline ranks, 4 microbatches x (F, B)
// per rank, then the exposed gradient sync and the optimizer; 8 transfers.
// RUN: shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=4 evaluate=pp=2,dp=2,mbs=1,schedule=1f1b format=html report=%t.pp.html" -o /dev/null
// RUN: %python -m autoshard.report --summary %t.pp.html | FileCheck %s --check-prefix=PP
// PP: sections candidates predicted-step
// PP: bars candidate-time kind=time bars=1
// PP-NEXT:   bar 0: compute {{(exposed )?}}bubbletime optimizer
// PP: timeline timeline-predicted kind=predicted lanes=2 units=22 bubbles={{[0-9]+}} arrows=8
// PP-NEXT:   lane 0: 11 units (B=4 F=4 comm=1 other=2)
// PP-NEXT:   lane 1: 11 units (B=4 F=4 comm=1 other=2)

// A format it does not write is an error naming it.
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=4 format=pdf" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: dist-auto-plan: format must be 'text', 'json' or 'html', found 'pdf'
