"""GibbsAUC in scikit-learn's machinery."""

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator

from pacauc import GibbsAUC


def test_check_estimator():
    # The default estimator (method="ep"), every check of scikit-learn's
    # suite; GibbsAUC declares itself binary-only (AUC has two classes).
    check_estimator(GibbsAUC())


def test_check_estimator_logit():
    check_estimator(GibbsAUC(method="logit"))


def test_grid_search_over_gamma(toy):
    X, y = toy
    grid = GridSearchCV(GibbsAUC(method="ep"), {"gamma": ["0.5n", "2n", "8n"]}, cv=3, scoring="roc_auc")
    grid.fit(X, y)
    assert grid.best_params_["gamma"] in ("0.5n", "2n", "8n")
    assert grid.best_estimator_.record_["gamma"] > 0


def test_pipeline_and_cross_val_score(toy):
    X, y = toy
    pipe = make_pipeline(StandardScaler(), GibbsAUC(method="vb"))
    scores = cross_val_score(pipe, X, y, cv=3, scoring="roc_auc")
    assert scores.shape == (3,) and np.all(scores > 0.6)
