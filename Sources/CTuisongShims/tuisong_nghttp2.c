#include "tuisong_nghttp2.h"
