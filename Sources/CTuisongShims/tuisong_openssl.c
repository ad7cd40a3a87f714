#include "tuisong_openssl.h"
