#include "base/testing/fake_clock.h"
