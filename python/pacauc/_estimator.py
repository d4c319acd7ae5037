"""`GibbsAUC`: a scikit-learn estimator over pacauc's spec, engine and run
records. Every setting of the method registry is a keyword (the registry's
key; `lambda` is `lambda_`), checked by the library's own spec code; `fit`
runs exactly what `pacauc fit` runs and keeps its run record (`record_`),
which is also the model (`save` / `pacauc predict`, pickling).

Where it differs from `pacauc fit`, as scikit-learn users expect:
- `method` defaults to "ep" (the CLI's default is logit);
- `test_frac` defaults to 0: `fit` trains on every row it is given (give
  `test_frac=0.25` for the record's held-out AUC, as the CLI does);
- NaN or infinity in X is an error unless `missing="drop"` (then rows with a
  NaN are dropped and counted, as the CLI drops rows with missing cells);
- the positive class is scikit-learn's: the greater of the two labels
  (`classes_[1]`, which `roc_auc` scoring treats as positive), unless
  `positive` is given.
"""

import json
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics import roc_auc_score
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted

from . import _native, _table

from sklearn.utils.validation import validate_data as _validate_data

REGISTRY = json.loads(_native.registry_json())
SETTINGS = {s["key"]: s for s in REGISTRY["settings"]}
METHODS = [m["name"] for m in REGISTRY["methods"]]
# Python names of the registry keys (a keyword cannot be called `lambda`).
PY_NAME = {k: (k + "_" if k == "lambda" else k) for k in SETTINGS}
REGISTRY_KEY = {v: k for k, v in PY_NAME.items()}
# Keywords of the estimator that are not settings of a run.
EXTRA = ("n_jobs", "progress")
DEFAULTS = {"method": "ep", "test_frac": 0.0}


_FORKED = []


def forked():
    """Called in a child forked while threaded matrix products are on."""
    _FORKED.append(True)


def check_not_forked():
    if _FORKED:
        raise RuntimeError(
            "pacauc cannot run in a process forked from one that imported it with "
            "MATMUL_NUM_THREADS > 1 (the matrix products' thread pool does not survive fork): "
            "use multiprocessing's 'spawn' or 'forkserver' start method, or leave "
            "MATMUL_NUM_THREADS unset"
        )


class PacaucWarning(UserWarning):
    """A reason to doubt a fit (the record's `warnings`, with its code)."""


def _setting_text(key, value):
    """A keyword's value as the text the registry parses (None: not given)."""
    kind = SETTINGS[key]["kind"]
    if value is None:
        return None
    if kind == "switch":
        return "true" if value else None
    if kind == "text_list":
        items = [value] if isinstance(value, str) else list(value)
        return [str(v) for v in items]
    if kind == "numbers" and not isinstance(value, str):
        return ",".join(str(float(v)) for v in np.ravel(value))
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{PY_NAME[key]} must be a number or text; got {value!r}")
    return str(value)


def _value_of_text(key, text):
    """A setting's text (from a record's spec) as the keyword's value."""
    kind = SETTINGS[key]["kind"]
    if kind == "switch":
        return True
    if kind == "count":
        return int(text)
    if kind == "number":
        return float(text)
    if kind == "numbers":
        return [float(t) for t in text.split(",")]
    if kind in ("gamma", "tunable"):
        try:
            return float(text)
        except ValueError:
            return text
    return text


class GibbsAUCBase(ClassifierMixin, BaseEstimator):
    """The methods of `GibbsAUC` (its `__init__` is generated from the registry)."""

    # --- the spec -------------------------------------------------------------
    def _given(self):
        pairs = []
        for key in SETTINGS:
            value = getattr(self, PY_NAME[key])
            if key == "test_frac" and getattr(self, "test", None) is not None and value == 0.0:
                continue  # a test file is the test set
            text = _setting_text(key, value)
            if text is None:
                continue
            for t in text if isinstance(text, list) else [text]:
                pairs.append((key, t))
        return pairs

    def spec(self):
        """The run specification these keywords make (JSON as a dict); a
        ValueError with the library's message if a setting is refused."""
        return json.loads(_native.check_spec(str(self.method), self._given()))

    def command_line(self, path="DATA.csv"):
        """The `pacauc fit` command that runs the same spec on the file `path`."""
        return _native.command_line(str(path), str(self.method), self._given())

    def _progress_callback(self):
        p = self.progress
        if p is None or p is False:
            return None
        if p is True:
            return _ProgressBar()
        if not callable(p):
            raise ValueError("progress must be None, True (a progress bar) or a callable")
        return lambda text: p(json.loads(text))

    # --- fit ------------------------------------------------------------------
    def fit(self, X, y):
        """Fits on X (array or DataFrame; a DataFrame's column names are kept,
        its text columns one-hot encoded as a CSV file's) and binary labels y."""
        if self.target is not None:
            raise ValueError("target does not apply to fit(X, y): y is the target")
        allow_nan = self.missing == "drop"
        frame = _table.is_dataframe(X)
        text_cols = _table.text_columns(X)
        if text_cols:
            y = _validate_data(self, X="no_validation", y=y, reset=True)
            self.n_features_in_ = X.shape[1]
            self.feature_names_in_ = np.asarray([str(c) for c in X.columns], dtype=object)
            header = list(self.feature_names_in_)
            columns = _table.frame_columns(X)
            if len(y) != len(X):
                raise ValueError(f"X has {len(X)} rows and y {len(y)}")
        else:
            ensure = "allow-nan" if allow_nan else True
            Xv, y = _validate_data(
                self, X, y, dtype=np.float64, ensure_all_finite=ensure, y_numeric=False
            )
            header = (
                [str(c) for c in self.feature_names_in_]
                if hasattr(self, "feature_names_in_")
                else [f"x{j}" for j in range(Xv.shape[1])]
            )
            columns = _table.array_columns(Xv)
        check_classification_targets(y)
        kind = type_of_target(y, input_name="y")
        if kind != "binary":
            raise ValueError(
                f"Only binary classification is supported. The type of the target is {kind}: "
                "GibbsAUC scores rows so that one class ranks above the other (AUC); give two "
                "classes, or one class against the rest"
            )
        classes = np.unique(y)
        if len(classes) < 2:
            raise ValueError(
                "y has one class; GibbsAUC scores rows so that one class ranks above the other "
                "and needs two classes"
            )
        if len(classes) > 2:
            raise ValueError(
                f"y has {len(classes)} classes; GibbsAUC is a binary scorer (AUC): "
                "give two classes, or one class against the rest"
            )
        self.classes_ = classes
        label_text = _table.label_text(y)
        class_text = _table.label_text(classes)
        given = self._given()
        if self.positive is None and set(class_text) not in ({"0", "1"}, {"-1", "1"}):
            # scikit-learn's positive class: the greater label.
            given.append(("positive", class_text[1]))
        positive_text = str(self.positive) if self.positive is not None else class_text[1]
        if positive_text not in class_text:
            raise ValueError(
                f"positive {self.positive!r} is not one of the labels {list(classes)}"
            )
        self._positive_index = class_text.index(positive_text)
        wanted = str(getattr(y, "name", None) or "y") if frame else "y"
        target = _table.free_name(wanted, set(header))
        name = "<DataFrame>" if frame else "<array>"
        check_not_forked()
        record = _native.fit_table(
            name,
            str(self.method),
            given,
            header + [target],
            columns + [label_text],
            self.n_jobs,
            self._progress_callback(),
        )
        self._set_record(record)
        return self

    def _set_record(self, record, announce=True):
        self._record = record
        r = json.loads(record.to_json())
        self.record_ = r
        self.coef_names_ = [c["name"] for c in r["coefficients"]]
        self.coef_ = np.array([_num(c["mean"]) for c in r["coefficients"]], dtype=float)
        self.coef_sd_ = np.array([_num(c["sd"]) for c in r["coefficients"]], dtype=float)
        votes = r["model"].get("votes")
        self.draws_ = (
            np.array(votes["theta"], dtype=float).reshape(len(votes["theta"]), -1)
            if votes
            else None
        )
        self.log_evidence_ = r.get("log_evidence")
        self.bound_ = r.get("bound")
        self.warnings_ = list(r.get("warnings", []))
        self.converged_ = bool(r["converged"])
        self.threshold_ = r["model"].get("threshold")
        if announce:
            for w in self.warnings_:
                warnings.warn(f"[{w['code']}] {w['message']}", PacaucWarning, stacklevel=3)

    # --- scoring --------------------------------------------------------------
    def _predict_table(self, X):
        check_is_fitted(self, "record_")
        if _table.text_columns(X):
            header = [str(c) for c in X.columns]
            if hasattr(self, "feature_names_in_") and list(self.feature_names_in_) != header:
                raise ValueError(
                    "The feature names should match those that were passed during fit"
                )
            columns = _table.frame_columns(X)
        else:
            Xv = _validate_data(self, X, dtype=np.float64, reset=False)
            header = (
                [str(c) for c in self.feature_names_in_]
                if hasattr(self, "feature_names_in_")
                else [f"x{j}" for j in range(Xv.shape[1])]
            )
            columns = _table.array_columns(Xv)
        check_not_forked()
        out = self._record.predict(header, columns)
        bad = [(i, s) for i, s in enumerate(out["status"]) if s != "ok"]
        if bad:
            i, why = bad[0]
            raise ValueError(
                f"{len(bad)} row(s) cannot be scored; row {i} (from 0): {why}"
            )
        return out

    def score_samples(self, X):
        """The record's scores (the posterior-mean score), bit for bit those
        `pacauc predict` gives the same rows."""
        return self._predict_table(X)["score"]

    def decision_function(self, X):
        """The score minus the record's class cut (`threshold_`): positive
        where `predict` says the positive class; ranks as the score."""
        s = self.score_samples(X)
        if self.threshold_ is None:
            raise ValueError("this record has no class cut (written before it): fit again")
        return s - self.threshold_

    def predict(self, X):
        """The positive class where the score is above the record's cut (the
        cut that calls the training share of positives positive)."""
        pos = self.decision_function(X) > 0
        neg_index = 1 - self._positive_index
        return np.where(pos, self.classes_[self._positive_index], self.classes_[neg_index])

    def vote_share(self, X):
        """Share of the record's posterior draws that call each row positive
        (each draw at its own cut), as `pacauc predict` reports; sample-based
        fits (smc, gcs) only."""
        out = self._predict_table(X)
        if "vote" not in out:
            raise AttributeError(
                f"vote_share needs posterior draws, which a {self.record_['method']} "
                "record does not keep (fit with method='smc' or 'gcs')"
            )
        return out["vote"]

    def score_sd(self, X):
        """The posterior sd of each row's score (methods with a posterior)."""
        out = self._predict_table(X)
        if "score_sd" not in out:
            raise AttributeError(f"a {self.record_['method']} record has no posterior sd")
        return out["score_sd"]

    def score(self, X, y, sample_weight=None):
        """AUC of the scores on (X, y), the positive class as in fit."""
        y = np.asarray(y)
        positive = y == self.classes_[self._positive_index]
        return roc_auc_score(positive, self.score_samples(X), sample_weight=sample_weight)

    # --- records --------------------------------------------------------------
    def save(self, path):
        """Writes the run record (atomically): `pacauc predict`, `replay`,
        `plot` and `bound` read it; `pacauc.load` gives the estimator back."""
        check_is_fitted(self, "record_")
        self._record.save(str(path))

    def to_json(self):
        check_is_fitted(self, "record_")
        return self._record.to_json()

    def to_inference_data(self):
        """The posterior as an ArviZ InferenceData (needs arviz)."""
        from ._arviz import to_inference_data

        check_is_fitted(self, "record_")
        return to_inference_data(self)

    def __getstate__(self):
        state = dict(super().__getstate__())  # object's is the live __dict__
        if "_record" in state:
            state["_record"] = state["_record"].to_json()
        state.pop("record_", None)
        return state

    def __setstate__(self, state):
        record = state.pop("_record", None)
        super().__setstate__(state)
        if record is not None:
            self._set_record(_native.Record.from_json(record), announce=False)

    # --- scikit-learn tags ----------------------------------------------------
    def __sklearn_is_fitted__(self):
        # (`lambda_` is a keyword, not a fitted attribute.)
        return hasattr(self, "record_")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.input_tags.allow_nan = self.missing == "drop"
        return tags



def _num(v):
    return float("nan") if v is None else float(v)


class _ProgressBar:
    """One line on stderr from the engine's events (progress=True)."""

    def __init__(self):
        import sys

        self.out = sys.stderr
        self.n = 0

    def __call__(self, text):
        e = json.loads(text)
        if e.get("event") == "log":
            return
        bits = [str(e.get("event", ""))]
        for key in ("stage", "sweep", "iteration", "batch", "gamma", "ess_frac", "delta", "rhat"):
            if isinstance(e.get(key), (int, float)):
                bits.append(f"{key} {e[key]:.4g}")
        self.out.write("\r\x1b[2K" + "  ".join(bits))
        self.out.flush()


def _make_class():
    params = ["method"] + [PY_NAME[k] for k in SETTINGS] + list(EXTRA)
    args = ", ".join(f"{p}={DEFAULTS.get(p)!r}" for p in params)
    body = "\n".join(f"    self.{p} = {p}" for p in params)
    src = f"def __init__(self, {args}):\n{body}\n"
    ns = {}
    exec(src, ns)  # an explicit signature: scikit-learn reads get_params from it
    init = ns["__init__"]
    helps = "\n".join(
        f"    {PY_NAME[k]} : {s['kind']} (default: {DEFAULTS.get(k) if k in DEFAULTS else (s['default'] or s['unset'] or 'none')}); "
        f"methods {', '.join(s['methods'])}. {s['help']}"
        for k, s in SETTINGS.items()
    )
    doc = (
        __doc__
        + "\nParameters\n----------\n    method : one of "
        + ", ".join(METHODS)
        + " (default: ep)\n"
        + helps
        + "\n    n_jobs : int or None — threads of the run (None: all cores); results do not"
        " depend on it.\n    progress : None, True (a progress bar on stderr) or a callable"
        " given each engine event as a dict.\n"
    )
    return type("GibbsAUC", (GibbsAUCBase,), {"__init__": init, "__doc__": doc, "__module__": "pacauc"})


GibbsAUC = _make_class()


def from_record(record):
    """An estimator fitted by `record` (a native Record): its keywords from
    the record's spec, its classes from the record's labels."""
    r = json.loads(record.to_json())
    method, given = _native.given_of(json.dumps(r["spec"]))
    params = {"method": method}
    for key, text in given:
        name = PY_NAME[key]
        value = _value_of_text(key, text)
        if SETTINGS[key]["kind"] == "text_list":
            params.setdefault(name, []).append(value)
        else:
            params[name] = value
    # A spec without an explicit test_frac split 25% (the registry's default).
    params.setdefault("test_frac", None)
    est = GibbsAUC(**params)
    est._set_record(record, announce=False)
    positive = r["dataset"]["positive_label"]
    others = sorted(k for k in r["dataset"].get("label_counts", {}) if k != positive)
    negative = others[0] if len(others) == 1 else ("other" if others else f"not {positive}")
    classes = [_label_value(negative), _label_value(positive)]
    est.classes_ = np.array(classes, dtype=object if any(isinstance(c, str) for c in classes) else None)
    est._positive_index = 1
    names = r["model"]["schema"]["rules"]
    est.feature_names_in_ = np.asarray([rule["column"] for rule in names], dtype=object)
    est.n_features_in_ = len(names)
    return est


def _label_value(text):
    try:
        return int(text)
    except ValueError:
        return text
