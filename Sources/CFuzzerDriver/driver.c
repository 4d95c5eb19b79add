#include "orchard_fuzzer_driver.h"
