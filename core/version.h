/* core/version.h: the qprobe version, printed by --version and part of
 * every content hash a result carries (a sweep row computed by another
 * version is computed again). */
#ifndef QP_CORE_VERSION_H
#define QP_CORE_VERSION_H

#define QP_VERSION "0.1.0"

#endif
