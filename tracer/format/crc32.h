/* crc32.h - CRC-32C (Castagnoli), the block checksum of .trc files,
 * computed by the recorder in the traced process as well as by the tools:
 * no allocation, no state. */
#ifndef DMM_FORMAT_CRC32_H
#define DMM_FORMAT_CRC32_H

#include <stddef.h>
#include <stdint.h>

uint32_t dmm_crc32(uint32_t crc, const void *buf, size_t len);

#endif
