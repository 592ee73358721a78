// Bad inputs: one clear message naming the key/option and value, non-zero exit.
// RUN: not %python -m autoshard.models %configs/models/gpt2-124m.json --batch 2 --seq 2048 2>&1 | FileCheck %s --check-prefix=SEQ
// RUN: not %python -m autoshard.models %configs/models/llama3-8b.json --batch 0 --seq 16 2>&1 | FileCheck %s --check-prefix=BATCH
// RUN: not %python -m autoshard.models %configs/models/llama3-8b.json --batch 1 --seq 16 --capacity-factor 1.0 2>&1 | FileCheck %s --check-prefix=CF
// RUN: not %python -m autoshard.models %t.does-not-exist.json --batch 1 --seq 16 2>&1 | FileCheck %s --check-prefix=MISSING

// SEQ: autoshard.models: error: {{.*}}gpt2-124m.json: seq 2048 exceeds the model's maximum positions 'n_positions' = 1024
// SEQ-NOT: Traceback
// BATCH: autoshard.models: error: option batch must be an integer >= 1, got 0
// CF: autoshard.models: error: option capacity_factor = 1.0 only applies to MoE models, not 'llama'
// MISSING: autoshard.models: error: {{.*}}does-not-exist.json: cannot read config
