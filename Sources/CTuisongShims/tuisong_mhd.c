#include "tuisong_mhd.h"
