// PYHIPBENCH_API marks the public API: the core is compiled with
// -fvisibility=hidden, so only what carries it is visible outside a shared
// object the static library is linked into (the Python module _core, or an
// embedder's own library). Exception classes carry it so that their type
// information is one across shared objects and `catch` works there.
#pragma once

#define PYHIPBENCH_API __attribute__((visibility("default")))
