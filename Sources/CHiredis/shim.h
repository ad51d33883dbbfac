#ifndef AUTHGATE_CHIREDIS_SHIM_H
#define AUTHGATE_CHIREDIS_SHIM_H
#include <hiredis/hiredis.h>
#endif
