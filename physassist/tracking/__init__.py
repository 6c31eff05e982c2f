"""MLflow tracking of runs, sweeps and reports.

MLflow's usage telemetry is off in our processes (``MLFLOW_DISABLE_TELEMETRY``, unless the
user set it): at ``import mlflow`` it starts a thread that fetches its config from the internet
and, when that fails (no network), pops ``_MLFLOW_TELEMETRY_SESSION_ID`` from ``os.environ``
while other threads may be copying the environment (``subprocess``, ``os.environ.copy()``), which
then raise ``KeyError('_MLFLOW_TELEMETRY_SESSION_ID')``: seen as "tracking failed" under
concurrent sweeps. Every module that imports mlflow is in this package, so this runs first.
"""

import os

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
