#pragma once

#include <gtest/gtest.h>

#include "base/status.h"

// gtest assertions that a Status (or a Result, through its status) is ok, printing the
// expression and the error otherwise.
#define ASSERT_OK(expr)                                          \
  do {                                                           \
    const ::warren::Status warren_st_ = (expr);                  \
    ASSERT_TRUE(warren_st_.ok()) << #expr << ": " << warren_st_; \
  } while (0)
#define EXPECT_OK(expr)                                          \
  do {                                                           \
    const ::warren::Status warren_st_ = (expr);                  \
    EXPECT_TRUE(warren_st_.ok()) << #expr << ": " << warren_st_; \
  } while (0)
