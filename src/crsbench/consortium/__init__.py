"""Several sites, no images shared: site summaries and the consortium's pooled verdict.

- :mod:`~crsbench.consortium.summary`: the site summary (records, JSON in and out);
- :mod:`~crsbench.consortium.export`: a cohort profile's store → its site summary;
- :mod:`~crsbench.consortium.meta`: random-effects pooling (DerSimonian–Laird, REML);
- :mod:`~crsbench.consortium.compare`: which summaries may be pooled together;
- :mod:`~crsbench.consortium.combine`: pooled axes and CRS, heterogeneity, prediction
  intervals for a new site, the ranking's stability over sites;
- :mod:`~crsbench.consortium.page` and :mod:`~crsbench.consortium.tables`: the consortium
  page and its CSV / JSON tables;
- :mod:`~crsbench.consortium.settings`: the versioned settings (``resources/consortium``);
- :mod:`~crsbench.consortium.planted`: planted consortia (the tests and the coverage benchmark).
"""
