// dist-apply-plan-invalid on the builder's models; the tests on hand-written IR are
// test/Dialect/Dist/dist-apply-plan-invalid.mlir.

// RUN: %python -m autoshard.models %autoshard_src/configs/models/mixtral-tiny-cpu.json --batch 8 --seq 8 -q | shard-opt --tfm-autodiff | not shard-opt --dist-apply-plan="plan=dp=8,ep=8" 2>&1 | FileCheck %s --check-prefix=EP-EXPERTS
// EP-EXPERTS: error: plan ep=8: the model's num_experts = 4 is not divisible by ep

// Real models: an unpadded vocabulary does not split; neither does an odd
// sequence under SP.
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 4 --seq 16 -q | shard-opt --tfm-autodiff | not shard-opt --dist-apply-plan="plan=tp=2" 2>&1 | FileCheck %s --check-prefix=VOCAB
// VOCAB: error: plan tp=2: the model's padded_vocab_size = 65 is not divisible by tp (pad the vocabulary: --vocab-multiple)
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 4 --seq 15 --vocab-multiple 2 -q | shard-opt --tfm-autodiff | not shard-opt --dist-apply-plan="plan=tp=2,sp=1" 2>&1 | FileCheck %s --check-prefix=SEQ
// SEQ: error: plan sp=1: the sequence dim (size 15) of the hidden state is not divisible by tp=2
