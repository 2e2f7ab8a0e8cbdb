"""Sources of real code: kernels of importable modules (``modules``) and of running programs (``traced``)."""
