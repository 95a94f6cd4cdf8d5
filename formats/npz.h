/* formats/npz.h: NumPy .npz archives (numpy.savez / savez_compressed), a
 * zip file of .npy members, read and written through libzip (the only
 * module that calls it).
 *
 * As a dump (formats/dump.h, QP_DUMP_NPZ): a tensor's name is its member
 * name without ".npy" (numpy's naming); stored and deflated members and
 * zip64 archives read, as numpy writes them (numpy always puts zip64
 * extra fields in the local headers). Opening lists the tensors from the
 * first bytes of each member only; loading one inflates that member.
 *
 * Tensors numpy has no dtype for (bf16, float8, packed 2/3/4-bit) are
 * stored as 1-D u8 members of their bytes; they, the quantization axis /
 * block size of quantized tensors (whose scales travel as NAME.scale and
 * NAME.zero_point members) and the dump's metadata are described in a
 * member "__qprobe__.json" (formats/dump-info.h), written only when
 * needed. The writer streams every member into one temporary file as it
 * is added, builds the archive (stored members, like numpy.savez) at
 * commit, and renames it into place. */
#ifndef QP_FORMATS_NPZ_H
#define QP_FORMATS_NPZ_H

#include "formats/dump.h"

/* The member holding what npy cannot say (formats/dump-info.h). */
#define QP_NPZ_INFO_MEMBER "__qprobe__.json"

#endif
