"""Long runs over many inputs, resumable, in this process or on Ray: ``discover-batch``
(:mod:`perspectrum.batch.discover_run`) and ``map`` over a large pile
(:mod:`perspectrum.batch.map_run`), their files, and the engines that run them."""
