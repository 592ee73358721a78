// dist-explain format=html: one self-contained page per plan, read back by
// `python -m autoshard.report --summary` (sections, the lanes and units of
// each timeline, the memory bars); the numbers are the text report's.

// Pipeline with virtual stages: pp=2, vpp=2 (4 stages), 2 microbatches,
// interleaved. One lane per pipeline rank, one box per scheduled unit
// (4 stages x 2 microbatches x F and B = 16), in both the unit-cost and
// the FLOP-weighted timeline; 12 transfers (stages 1-3 receive each
// microbatch's activation, stages 0-2 its gradient, all across ranks).
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 4 --seq 8 --vocab-multiple 8 -q | shard-opt --tfm-autodiff=microbatches=2 -o %t.ts2.mlir
// RUN: shard-opt %t.ts2.mlir --plan pp=2,dp=2,mb=2,schedule=interleaved,vpp=2 --dist-propagate --dist-partition --dist-pipeline-split --dist-explain="format=html output=%t.pp.html" -o /dev/null
// RUN: %python -m autoshard.report --summary %t.pp.html | FileCheck %s --check-prefix=PP
// RUN: FileCheck %s --check-prefix=PP-HTML < %t.pp.html
// PP: sections strategies mesh pipeline memory collectives text
// PP-NEXT: mesh 4 ranks
// PP-NEXT: timeline timeline-unit kind=unit lanes=2 units=16 bubbles={{[1-9]}} arrows=12
// PP-NEXT:   lane 0: 8 units (B=4 F=4)
// PP-NEXT:   lane 1: 8 units (B=4 F=4)
// PP-NEXT: timeline timeline-flops kind=flops lanes=2 units=16 bubbles={{[1-9]}} arrows=12
// PP-NEXT:   lane 0: 8 units (B=4 F=4)
// PP-NEXT:   lane 1: 8 units (B=4 F=4)
// PP-NEXT: bars memory kind=memory bars=3
// PP-NEXT:   bar 0: param grad opt act io slack
// (Stage 1 peaks in its tail, with the gradients accumulated per layer and
// no activation alive.)
// PP-NEXT:   bar 1: param grad opt io slack
// PP-NEXT:   bar 2: param opt
// PP-HTML: <!DOCTYPE html>
// PP-HTML: <style>
// PP-HTML-NOT: <link
// PP-HTML-NOT: src="http
// PP-HTML: <td><b>DP</b></td><td>dp=2</td><td>batch: tokens dim 0 (8x8 -&gt; 4x8)
// PP-HTML-SAME: <code>all_reduce[dp]</code> &times;18, 1.57 MiB
// PP-HTML: <td><b>PP</b></td><td>pp=2</td><td>4 stages over 2 pipeline ranks (2 per rank), 2 microbatches, schedule interleaved; stage 0 on rank 0: layer 0 + embedding; stage 1 on rank 1: layer 1; stage 2 on rank 0: layer 2; stage 3 on rank 1: layer 3 + head, loss</td>
// PP-HTML-SAME: <code>recv[pp]</code> &times;8, 120.00 KiB<br><code>send[pp]</code> &times;7, 84.00 KiB
// PP-HTML: <div class="rank" data-rank="3"><b>rank 3</b>pp 1 · dp 1</div>
// PP-HTML: Unit cost (F=1, B=2): makespan 15.00, bubble 0.250 of the ideal time ((p-1)/(v*m) = 0.250)
// PP-HTML: <rect class="unit F" {{.*}} data-mb="0" data-op="0F0"><title>0F0: forward of stage 0, microbatch 0, 0.00 to 1.00</title>
// PP-HTML: <rect class="unit F chunk1" {{.*}} data-op="2F0">
// PP-HTML: <line class="p2p" {{.*}}<title>activation of microbatch 0: 0F0 on rank 0 -&gt; 1F0 on rank 1</title>
// PP-HTML: FLOP-weighted {{.*}}: makespan 15.11, bubble 0.259 of the ideal time
// PP-HTML: pp rank 0 (train_step__pp0)
// PP-HTML: 7.59 MiB
// PP-HTML: pp rank 1 (train_step__pp1)
// PP-HTML: one device, no plan
// PP-HTML: <details><summary>dist-explain format=text</summary><pre class="mono">dist-explain: nanogpt-shakespeare-char-cpu
// PP-HTML: <script>
// PP-HTML: </html>

// Zero-bubble (split backward): I and W units, 2 stages x 2 microbatches x 3.
// RUN: shard-opt %t.ts2.mlir --plan pp=2,mb=2,schedule=zb-h1 --dist-propagate --dist-partition --dist-pipeline-split --dist-explain="format=html output=%t.zb.html" -o /dev/null
// RUN: %python -m autoshard.report --summary %t.zb.html | FileCheck %s --check-prefix=ZB
// ZB: timeline timeline-unit kind=unit lanes=2 units=12
// ZB-NEXT:   lane 0: 6 units (F=2 I=2 W=2)
// ZB-NEXT:   lane 1: 6 units (F=2 I=2 W=2)

// ZB-V (vpp=2, V-shaped stage map: stages 1 and 2 on rank 1): 4 stages x
// 2 microbatches x (F, I, W) = 24 units; the V's turn stays on its rank,
// so 4 activation and 4 gradient transfers.
// RUN: shard-opt %t.ts2.mlir --plan pp=2,mb=2,schedule=zb-v,vpp=2 --dist-propagate --dist-partition --dist-pipeline-split --dist-explain="format=html output=%t.zbv.html" -o /dev/null
// RUN: %python -m autoshard.report --summary %t.zbv.html | FileCheck %s --check-prefix=ZBV
// ZBV: timeline timeline-unit kind=unit lanes=2 units=24 bubbles={{[0-9]+}} arrows=8
// ZBV-NEXT:   lane 0: 12 units (F=4 I=4 W=4)
// ZBV-NEXT:   lane 1: 12 units (F=4 I=4 W=4)

// Context parallelism (dp=2, cp=2, ZeRO-1): no pipeline section; the CP
// row carries the ring's ppermutes; on one device with a baseline the
// transient part is there too.
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 4 --seq 8 --vocab-multiple 8 -q | shard-opt --tfm-autodiff -o %t.ts.mlir
// RUN: shard-opt %t.ts.mlir --rt-lower --rt-plan-memory --rt-export=output=%t.one.json -o /dev/null
// RUN: shard-opt %t.ts.mlir --plan dp=2,cp=2,zero=1 --dist-propagate --dist-partition --dist-explain="format=html output=%t.cp.html baseline=%t.one.json" -o /dev/null
// RUN: %python -m autoshard.report --summary %t.cp.html | FileCheck %s --check-prefix=CP
// RUN: FileCheck %s --check-prefix=CP-HTML < %t.cp.html
// CP: sections strategies mesh memory collectives text
// CP-NEXT: mesh 4 ranks
// CP-NEXT: bars memory kind=memory bars=2
// CP-NEXT:   bar 0: param grad opt act io slack
// CP-NEXT:   bar 1: param grad opt act io slack
// CP-HTML: <td><b>CP</b></td><td>cp=2</td><td>sequence: tokens dim 1
// CP-HTML-SAME: <code>all_gather[cp]</code> &times;1, {{.*}}<br><code>ppermute[cp]</code> &times;32,
// CP-HTML: <td><b>ZeRO-1</b></td><td>dp*cp=4</td>
// CP-HTML: <div class="rank" data-rank="1"><b>rank 1</b>dp 0 · cp 1</div>
// CP-HTML: every rank (train_step)

// Expert parallelism (mixtral-tiny, dp=4, ep=2, ZeRO-1): the EP row with
// its all-to-alls.
// RUN: %python -m autoshard.models %autoshard_src/configs/models/mixtral-tiny-cpu.json --batch 4 --seq 8 -q | shard-opt --tfm-autodiff -o %t.moe.mlir
// RUN: shard-opt %t.moe.mlir --dist-apply-plan="plan=dp=4,ep=2,zero=1" --dist-propagate --dist-partition --dist-explain="format=html output=%t.ep.html" -o /dev/null
// RUN: %python -m autoshard.report --summary %t.ep.html | FileCheck %s --check-prefix=EP
// RUN: FileCheck %s --check-prefix=EP-HTML < %t.ep.html
// EP: sections strategies mesh memory collectives text
// EP-NEXT: mesh 4 ranks
// EP-HTML: <td><b>EP</b></td><td>ep=2</td><td>experts (dim 0): expert_gate, expert_up, expert_down (12), 4 -&gt; 2 experts per rank
// EP-HTML-SAME: <code>all_to_all[ep]</code> &times;16, 128.00 KiB

