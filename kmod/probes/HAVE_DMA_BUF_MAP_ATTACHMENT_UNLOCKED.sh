#!/bin/sh
# dma_buf_map_attachment_unlocked(): added by the dma-buf locking rework
# (6.2, backported to some 6.1 trees). Prints the test program.
cat <<'C'
#include <linux/dma-buf.h>
struct sg_table *probe(struct dma_buf_attachment *a)
{
	return dma_buf_map_attachment_unlocked(a, DMA_BIDIRECTIONAL);
}
C
