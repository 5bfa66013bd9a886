// SPDX-License-Identifier: MIT OR GPL-2.0-only
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
