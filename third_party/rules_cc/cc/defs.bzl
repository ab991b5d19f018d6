"""Offline rules_cc stand-in: forwards each rule to the native rule of the same name.

Bazel 4.2.3 loads `@rules_cc//cc:defs.bzl` from its built-in WORKSPACE suffix. Debian's packaged
rules_cc needs a newer Bazel, so this repository re-exports the native rules instead.
"""

def cc_binary(**kwargs):
    native.cc_binary(**kwargs)

def cc_library(**kwargs):
    native.cc_library(**kwargs)

def cc_test(**kwargs):
    native.cc_test(**kwargs)

def cc_import(**kwargs):
    native.cc_import(**kwargs)

def cc_toolchain(**kwargs):
    native.cc_toolchain(**kwargs)

def cc_toolchain_suite(**kwargs):
    native.cc_toolchain_suite(**kwargs)

def cc_proto_library(**kwargs):
    native.cc_proto_library(**kwargs)

def objc_library(**kwargs):
    native.objc_library(**kwargs)
