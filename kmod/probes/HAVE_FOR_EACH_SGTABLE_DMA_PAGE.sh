#!/bin/sh
# for_each_sgtable_dma_page(): added in 5.8. Prints the test program.
cat <<'C'
#include <linux/scatterlist.h>
unsigned long probe(struct sg_table *t)
{
	struct sg_dma_page_iter it;
	unsigned long n = 0;

	for_each_sgtable_dma_page(t, &it, 0)
		n++;
	return n;
}
C
