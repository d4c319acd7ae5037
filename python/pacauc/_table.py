"""Tables from Python to the library's loader: column names and columns, each
a float64 array (numbers; NaN is a missing cell) or a list of strings (text
columns of a DataFrame, one-hot encoded by the loader exactly as a CSV file's
would be)."""

import numpy as np


def is_dataframe(X):
    return hasattr(X, "columns") and hasattr(X, "dtypes") and hasattr(X, "iloc")


def text_columns(X):
    """Names of a DataFrame's non-numeric columns (empty for arrays)."""
    if not is_dataframe(X):
        return []
    out = []
    for name, dtype in zip(X.columns, X.dtypes):
        kind = getattr(dtype, "kind", "O")
        if kind not in "biuf":
            out.append(name)
    return out


def _text(values):
    out = []
    for v in values:
        if v is None or (isinstance(v, float) and np.isnan(v)):
            out.append(None)
        else:
            out.append(str(v))
    return out


def frame_columns(X):
    """A DataFrame's columns: numeric ones as float64 arrays, others as text."""
    text = set(text_columns(X))
    cols = []
    for name in X.columns:
        if name in text:
            cols.append(_text(X[name].tolist()))
        else:
            cols.append(np.ascontiguousarray(X[name].to_numpy(dtype=np.float64, na_value=np.nan)))
    return cols


def array_columns(X):
    """A 2-D float64 array's columns."""
    X = np.asarray(X, dtype=np.float64)
    return [np.ascontiguousarray(X[:, j]) for j in range(X.shape[1])]


def label_text(labels):
    """Labels as the loader reads a target column (numbers as integers where
    they are whole, so 1.0 and 1 are the same class)."""
    out = []
    for v in labels:
        if isinstance(v, (bool, np.bool_)):
            out.append(str(bool(v)))
        elif isinstance(v, (int, np.integer)):
            out.append(str(int(v)))
        elif isinstance(v, (float, np.floating)) and float(v).is_integer():
            out.append(str(int(v)))
        else:
            out.append(str(v))
    return out


def free_name(wanted, taken):
    """`wanted`, or `wanted_`, `wanted__`… if a feature already has that name."""
    name = wanted
    while name in taken:
        name += "_"
    return name
