// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Who hears of frees and of allocations, and in which order: one table, in
// subscriber_order.cpp, that the runtime subscribes from at start. A row
// is a listener: its steps at a free and at an allocation, its set-up
// (what it is told of its places, and when it starts listening) and its
// place in each order. The notify/ headers say why each order is what it
// is. A new listener is one row: the runtime, the recorder and the hook do
// not name it.
#pragma once

namespace gdrhook {

struct Runtime;

// The runtime's, once, at start, with its configuration read: every
// listener subscribed in the table's orders, then set up, row by row.
void subscribe_in_order(Runtime &rt);

} // namespace gdrhook
