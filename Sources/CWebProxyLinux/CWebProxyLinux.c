#include "CWebProxyLinux.h"
