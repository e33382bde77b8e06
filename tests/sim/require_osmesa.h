// The sim tests' skip: OSMesa rendering, or the reason it is unavailable.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "ember/sim/gl_context.h"

#define REQUIRE_OSMESA()                                                   \
  do {                                                                     \
    std::string why;                                                       \
    if (!::ember::sim::renderer_available(::ember::sim::RendererKind::kOSMesa, &why)) \
      GTEST_SKIP() << "OSMesa rendering unavailable: " << why;             \
  } while (0)
