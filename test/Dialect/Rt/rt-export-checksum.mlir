// rt-export's content checksum (docs/artifact-format.md, "Checksum"): the
// first top-level key, XXH3-64 of the text with its 16 digits as '0'
// (LLVM's xxh3_64bits), format version 5. The runtime (libxxhash) accepts
// it and rejects the file once its content is edited.
// REQUIRES: runtime
// RUN: shard-opt %S/Inputs/tiny-train-step.mlir --rt-lower --rt-plan-memory --rt-export=output=%t.json -o /dev/null
// RUN: FileCheck %s < %t.json
// The loader verifies it (then stops at the world size: the artifact is
// for 1 rank, -n asks 2).
// RUN: not shard-run %t.json --data %t.json -n 2 2>&1 | FileCheck %s --check-prefix=LOAD
// RUN: sed -e 's/"name": "tiny"/"name": "tinz"/' %t.json > %t.edited.json
// RUN: not shard-run %t.edited.json --data %t.json -n 2 2>&1 | FileCheck %s --check-prefix=EDITED
// Another content, another checksum.
// RUN: sed -e 's/name = "tiny"/name = "tinz"/' %S/Inputs/tiny-train-step.mlir | shard-opt --rt-lower --rt-plan-memory --rt-export=output=%t.2.json -o /dev/null
// RUN: not shard-run %t.2.json --data %t.json -n 2 2>&1 | FileCheck %s --check-prefix=LOAD
// RUN: %python -c "import sys; a, b = (open(p).read().split('\n')[1] for p in sys.argv[1:]); print('differ' if a != b else 'same')" %t.json %t.2.json | FileCheck %s --check-prefix=DIFF

// CHECK:      {
// CHECK-NEXT:   "checksum": "xxh3-64:{{[0-9a-f]+}}",
// CHECK-NOT:  xxh3-64:0000000000000000
// CHECK:      "version": 5,
// LOAD: shard-run: error: artifact '{{.*}}.json' was compiled for 1 ranks, but -n is 2
// EDITED: shard-run: error: artifact '{{.*}}edited.json': top level: field 'checksum' is xxh3-64:{{[0-9a-f]+}}, but the content hashes to xxh3-64:{{[0-9a-f]+}}: the file was corrupted or edited after rt-export wrote it
// DIFF: differ
