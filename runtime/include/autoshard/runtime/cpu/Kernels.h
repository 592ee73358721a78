//===- Kernels.h - All CPU kernels of the autoshard runtime -----*- C++ -*-===//
//
// One kernel per tfm op (spec/tfm-ops.md), forward and backward, templated on
// the element type (float and double are instantiated; ids are int32_t or
// int64_t). Plain functions on raw row-major pointers plus shapes; bad
// arguments throw std::invalid_argument or std::out_of_range naming the value
// found.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_CPU_KERNELS_H
#define AUTOSHARD_RUNTIME_CPU_KERNELS_H

#include "autoshard/runtime/cpu/Activation.h"
#include "autoshard/runtime/cpu/Attention.h"
#include "autoshard/runtime/cpu/Dropout.h"
#include "autoshard/runtime/cpu/Elementwise.h"
#include "autoshard/runtime/cpu/Embedding.h"
#include "autoshard/runtime/cpu/Loss.h"
#include "autoshard/runtime/cpu/Matmul.h"
#include "autoshard/runtime/cpu/Moe.h"
#include "autoshard/runtime/cpu/Norm.h"
#include "autoshard/runtime/cpu/Optimizer.h"
#include "autoshard/runtime/cpu/Pack.h"
#include "autoshard/runtime/cpu/Rope.h"
#include "autoshard/runtime/cpu/VocabParallel.h"

#endif // AUTOSHARD_RUNTIME_CPU_KERNELS_H
