// RUN: shard-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{axis 'dp' is declared twice}}
dist.mesh @m [dp = 2, dp = 2]
