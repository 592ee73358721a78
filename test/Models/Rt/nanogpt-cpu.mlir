// End to end on the nanoGPT CPU model: builder -> tfm-autodiff -> rt-lower ->
// rt-plan-memory -> rt-export. Checks what does not depend on the residuals
// autodiff chooses to save: state, entries, functions, and that the plan
// passes its independent check when read back.
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 12 --seq 64 -q -o %t.mlir
// RUN: shard-opt %t.mlir --tfm-autodiff --rt-lower --rt-plan-memory --rt-export=output=%t.json -o %t.rt.mlir
// RUN: shard-opt %t.rt.mlir --rt-plan-memory=verify-only=true -o /dev/null
// RUN: %python -c "import json, sys; a = json.load(open(sys.argv[1])); m = a['memory']; assert m['peak_bytes'] == m['state_bytes'] + m['constant_bytes'] + m['transient_bytes']; assert m['transient_bytes'] == max(e['frame_bytes'] for e in m['entries'].values()); print('state entries', len(a['state']))" %t.json | FileCheck %s --check-prefix=SUM
// RUN: FileCheck %s < %t.json

// 35 parameters, each with two moments.
// SUM: state entries 105

// One body per block function, however many layers call it.
// CHECK:      "entries": {
// CHECK-NEXT:   "eval": {
// CHECK-NEXT:     "function": "eval",
// CHECK:        "logits": {
// CHECK:          "outputs": {"logits":{"dtype":"f32","global_shape":[12,64,65],"shape":[12,64,65],"sharding":{{\[\[}}],[],[]]}}
// CHECK:        "train_step": {
// CHECK:          "outputs": {
// CHECK-NEXT:       "grad_norm": {"dtype":"f32","global_shape":[],"shape":[],"sharding":[]},
// CHECK-NEXT:       "loss": {"dtype":"f32","global_shape":[],"shape":[],"sharding":[]}
// CHECK:        "name": "gpt2_block",
// CHECK:        "name": "gpt2_block_fwd",
// CHECK:        "name": "gpt2_block_bwd",
// 804096 parameters of 4 bytes, for the parameters and each moment.
// CHECK:        "state_breakdown": {"opt_m":3216384,"opt_v":3216384,"param":3216384},
// CHECK-NEXT:   "state_bytes": 9649152,
// CHECK:        "name": "nanogpt-shakespeare-char-cpu",
// CHECK:        "seq": 64,
// CHECK:        {"dtype":"f32","global_shape":[65,128],"init":{"kind":"normal","std":0.02},"kind":"param","name":"wte","shape":[65,128],"sharding":{{\[\[}}],[]],"weight_decay":true},
// CHECK:        {"dtype":"f32","global_shape":[128],"init":{"kind":"ones"},"kind":"param","name":"layers.0.ln_1.weight","shape":[128],"sharding":{{\[\[}}]],"weight_decay":false},
