#!/bin/sh
# Dynamic dma-buf importers that may accept peer-to-peer (PCI BAR) memory:
# struct dma_buf_attach_ops with allow_peer2peer and move_notify, plus
# dma_buf_pin()/dma_buf_unpin() (5.7 and later).
cat <<'C'
#include <linux/dma-buf.h>
static void mn(struct dma_buf_attachment *a) { }
static const struct dma_buf_attach_ops ops = {
	.allow_peer2peer = true,
	.move_notify = mn,
};
struct dma_buf_attachment *probe(struct dma_buf *b, struct device *d)
{
	struct dma_buf_attachment *a = dma_buf_dynamic_attach(b, d, &ops, NULL);
	dma_buf_unpin(a);
	return dma_buf_pin(a) ? NULL : a;
}
C
