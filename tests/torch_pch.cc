// The translation unit of ember_test_torch_pch, the target whose precompiled libtorch headers the torch tests reuse.
