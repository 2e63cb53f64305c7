"""Who a caller is, from the transport alone: process probes, ancestry and the human's proof."""
