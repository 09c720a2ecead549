"""Infrastructure: errors, atomic files, hashing, devices, GPU locks, provenance records."""
