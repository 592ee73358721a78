// The artifact of the tiny train step (docs/artifact-format.md).
// RUN: shard-opt %S/Inputs/tiny-train-step.mlir --rt-lower --rt-plan-memory --rt-export=output=%t.json -o /dev/null
// RUN: FileCheck %s < %t.json
// RUN: %python -c "import json, sys; json.load(open(sys.argv[1]))" %t.json
// `-` is stdout; the IR is left unchanged.
// RUN: shard-opt %S/Inputs/tiny-train-step.mlir --rt-lower --rt-plan-memory --rt-export=output=- | FileCheck %s --check-prefix=STDOUT
// A program must be planned first.
// RUN: not shard-opt %S/Inputs/tiny-train-step.mlir --rt-lower --rt-export -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNPLANNED
// The runtime needs the model's vocabulary and batch shape.
// RUN: sed -e 's/batch = 2 : i64, //' %S/Inputs/tiny-train-step.mlir | not shard-opt --rt-lower --rt-plan-memory --rt-export -o /dev/null 2>&1 | FileCheck %s --check-prefix=MODEL

// STDOUT: "format": "autoshard-artifact",
// STDOUT: module attributes {tfm.model =
// STDOUT: rt.func @train_step() attributes {entry = "train_step", frame_bytes = 3456 : i64
// MODEL: error: rt-export: 'tfm.model' needs an integer 'batch' (the runtime sizes batches and masks sampling with it)
// UNPLANNED: error: 'rt.func' op is not planned (no frame_bytes); run rt-plan-memory before rt-export

// Three distinct constants (0 and 1 as layer indices, the f32 loss seed).
// CHECK:      "constants": [
// CHECK-NEXT:   {"data":[0],"dtype":"i64","id":0,"shape":[]},
// CHECK-NEXT:   {"data":[1],"dtype":"i64","id":1,"shape":[]},
// CHECK-NEXT:   {"data":[1],"dtype":"f32","id":2,"shape":[]}
// CHECK-NEXT: ],

// CHECK:      "entries": {
// CHECK-NEXT:   "eval": {
// CHECK-NEXT:     "function": "eval",
// CHECK-NEXT:     "inputs": {
// CHECK-NEXT:       "labels": {"dtype":"i32","global_shape":[2,4],"shape":[2,4],"sharding":{{\[\[}}],[]]},
// CHECK-NEXT:       "tokens": {"dtype":"i32","global_shape":[2,4],"shape":[2,4],"sharding":{{\[\[}}],[]]}
// CHECK-NEXT:     },
// CHECK-NEXT:     "outputs": {"loss":{"dtype":"f32","global_shape":[],"shape":[],"sharding":[]}}
// CHECK:        "logits": {
// CHECK-NEXT:     "function": "logits",
// CHECK-NEXT:     "inputs": {"tokens":{"dtype":"i32","global_shape":[2,4],"shape":[2,4],"sharding":{{\[\[}}],[]]}},
// CHECK-NEXT:     "outputs": {"logits":{"dtype":"f32","global_shape":[2,4,16],"shape":[2,4,16],"sharding":{{\[\[}}],[],[]]}}
// CHECK:        "train_step": {
// CHECK-NEXT:     "function": "train_step",
// CHECK-NEXT:     "inputs": {
// CHECK-NEXT:       "labels": {"dtype":"i32","global_shape":[2,4],"shape":[2,4],"sharding":{{\[\[}}],[]]},
// CHECK-NEXT:       "lr": {"dtype":"f32","global_shape":[],"shape":[],"sharding":[]},
// CHECK-NEXT:       "step": {"dtype":"i64","global_shape":[],"shape":[],"sharding":[]},
// CHECK-NEXT:       "tokens": {"dtype":"i32","global_shape":[2,4],"shape":[2,4],"sharding":{{\[\[}}],[]]}
// CHECK-NEXT:     },
// CHECK-NEXT:     "outputs": {
// CHECK-NEXT:       "grad_norm": {"dtype":"f32","global_shape":[],"shape":[],"sharding":[]},
// CHECK-NEXT:       "loss": {"dtype":"f32","global_shape":[],"shape":[],"sharding":[]}
// CHECK:      "format": "autoshard-artifact",

// A callee: arguments (inputs, then outputs), then planned locals.
// CHECK:      "functions": [
// CHECK-NEXT:   {
// CHECK-NEXT:     "buffers": [
// CHECK-NEXT:       {"dtype":"f32","id":0,"index":0,"kind":"arg","shape":[2,4,8]},
// CHECK-NEXT:       {"dtype":"i64","id":1,"index":1,"kind":"arg","shape":[]},
// CHECK-NEXT:       {"dtype":"f32","id":2,"index":2,"kind":"arg","shape":[8,8]},
// CHECK-NEXT:       {"dtype":"f32","id":3,"index":3,"kind":"arg","shape":[2,4,8]},
// CHECK-NEXT:       {"bytes":256,"category":"activation","dtype":"f32","id":4,"kind":"local","offset":0,"shape":[2,4,8]},
// CHECK-NEXT:       {"bytes":256,"category":"activation","dtype":"f32","id":5,"kind":"local","offset":256,"shape":[2,4,8]}
// CHECK-NEXT:     ],
// CHECK-NEXT:     "code": [
// CHECK-NEXT:       {"args":[0,2],"attrs":{},"op":"matmul","results":[4]},
// CHECK-NEXT:       {"args":[4],"attrs":{"tanh_approx":true},"op":"gelu","results":[5]},
// CHECK-NEXT:       {"args":[0,5],"attrs":{},"op":"add","results":[3]}
// CHECK-NEXT:     ],
// CHECK-NEXT:     "frame_bytes": 512,
// CHECK-NEXT:     "name": "blk",
// CHECK-NEXT:     "num_args": 4
// CHECK-NEXT:   },

// The train step: slots in the frame, state by name, constants by id.
// CHECK:            {"bytes":32,"dtype":"i32","id":0,"kind":"input","offset":0,"role":"tokens","shape":[2,4]},
// CHECK:            {"dtype":"f32","id":4,"kind":"state","name":"wte","shape":[16,8]},
// CHECK:            {"bytes":4,"dtype":"f32","id":13,"kind":"output","offset":256,"role":"loss","shape":[]},
// CHECK:            {"const":0,"dtype":"i64","id":16,"kind":"const","shape":[]},
// CHECK:            {"args":[15,16,5,17,18],"callee":"blk_fwd","frame_offset":1152,"op":"call"},
// CHECK:            {"args":[23,1],"attrs":{},"op":"cross_entropy","results":[13]},
// CHECK:            {"args":[29],"attrs":{"dims":[0,1]},"op":"reduce_sum","results":[30]},
// CHECK:            {"args":[0,33],"attrs":{"num_embeddings":16},"op":"embedding_grad","results":[36]},
// CHECK:            {"args":[38],"attrs":{"max_norm":1},"op":"clip_coef","results":[39,14]},
// In place: the results are the state buffers the kernel reads.
// CHECK-NEXT:       {"args":[4,37,7,10,3,2,39],"attrs":{"beta1":0.90000000000000002,"beta2":0.94999999999999996,"epsilon":1e-08,"weight_decay":0.10000000000000001},"op":"adamw","results":[4,7,10]},
// CHECK:          "frame_bytes": 3456,
// CHECK-NEXT:     "name": "train_step",
// CHECK-NEXT:     "num_args": 0

// peak = state + constants + the largest entry frame; the state and constant
// pools are packed (no padding): 3 x (512 + 256 + 32) and 8 + 8 + 4 bytes.
// CHECK:      "memory": {
// CHECK-NEXT:   "constant_bytes": 20,
// CHECK-NEXT:   "entries": {
// CHECK-NEXT:     "eval": {"breakdown_at_peak":{"activation":1024,"grad":0,"io":68,"workspace":0},"frame_bytes":1216},
// CHECK-NEXT:     "logits": {"breakdown_at_peak":{"activation":1024,"grad":0,"io":544,"workspace":0},"frame_bytes":1600},
// CHECK-NEXT:     "train_step": {"breakdown_at_peak":{"activation":1024,"grad":1824,"io":84,"workspace":0},"frame_bytes":3456}
// CHECK-NEXT:   },
// CHECK-NEXT:   "peak_bytes": 5876,
// CHECK-NEXT:   "state_breakdown": {"opt_m":800,"opt_v":800,"param":800},
// CHECK-NEXT:   "state_bytes": 2400,
// CHECK-NEXT:   "transient_bytes": 3456
// CHECK-NEXT: },
// CHECK-NEXT: "mesh": {"axes":[],"sizes":[]},
// CHECK-NEXT: "model": {
// CHECK-NEXT:   "batch": 2,
// CHECK-NEXT:   "dtype": "f32",
// CHECK-NEXT:   "name": "tiny",
// CHECK-NEXT:   "num_layers": 2,
// CHECK-NEXT:   "padded_vocab_size": 16,
// CHECK-NEXT:   "seq": 4,
// CHECK-NEXT:   "seq_len": 4,
// CHECK-NEXT:   "tie_word_embeddings": true,
// CHECK-NEXT:   "vocab_size": 16
// CHECK-NEXT: },
// CHECK-NEXT: "plan": {},
// CHECK-NEXT: "producer": "shard-opt (autoshard) MLIR 22.1.8",
// CHECK-NEXT: "state": [
// CHECK-NEXT:   {"dtype":"f32","global_shape":[16,8],"init":{"kind":"normal","std":0.02},"kind":"param","name":"wte","shape":[16,8],"sharding":{{\[\[}}],[]],"weight_decay":true},
// CHECK-NEXT:   {"dtype":"f32","global_shape":[8,8],"init":{"kind":"normal","std":0.02},"kind":"param","name":"layers.0.w","shape":[8,8],"sharding":{{\[\[}}],[]],"weight_decay":true},
// CHECK-NEXT:   {"dtype":"f32","global_shape":[8],"init":{"kind":"ones"},"kind":"param","name":"ln_f.weight","shape":[8],"sharding":{{\[\[}}]],"weight_decay":false},
// CHECK-NEXT:   {"dtype":"f32","global_shape":[16,8],"init":{"kind":"zeros"},"kind":"opt_m","name":"wte.exp_avg","of":"wte","shape":[16,8],"sharding":{{\[\[}}],[]]},
// CHECK:        {"dtype":"f32","global_shape":[8],"init":{"kind":"zeros"},"kind":"opt_v","name":"ln_f.weight.exp_avg_sq","of":"ln_f.weight","shape":[8],"sharding":{{\[\[}}]]}
// CHECK-NEXT: ],
// CHECK-NEXT: "version": 5,
// CHECK-NEXT: "world_size": 1
// CHECK-NEXT: }
