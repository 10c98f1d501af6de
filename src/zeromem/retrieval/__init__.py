"""The Zero-Mem retrieval pipeline: profile → route → views → fuse → close → calibrate."""
