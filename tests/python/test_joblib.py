"""The joblib backend "tailcut" (docs/PYTHON.md, "joblib and
scikit-learn"): joblib.Parallel and an unchanged scikit-learn
GridSearchCV run on tailcut and agree with joblib's default backend;
batches are idempotent only where the work is pure."""

import sys

import cloudpickle
import pytest

joblib = pytest.importorskip("joblib", reason="needs joblib (Debian: python3-joblib)")

import tailcut  # noqa: E402
from tailcut import joblib_backend  # noqa: E402

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # not importable on the workers


def cube(x):
    return x ** 3


@tailcut.idempotent
def marked(x):
    return -x


@pytest.fixture(scope="module")
def cluster():
    with tailcut.LocalCluster(executors=2, slots=1, allow_python=True) as c:
        yield c


@pytest.fixture(scope="module")
def ex(cluster):
    with tailcut.Executor(cluster=cluster) as e:
        yield e


def recorded(ex, monkeypatch):
    """The options of each batch the backend submits."""
    seen = []
    real = ex.submit_task

    def spy(fn, args=(), kwargs=None, options=None, outer=None):
        seen.append(dict(options, calls=len(getattr(fn, "items", [fn]))))
        return real(fn, args, kwargs, options, outer)

    monkeypatch.setattr(ex, "submit_task", spy)
    return seen


def test_registered_on_import_and_parallel_runs_on_tailcut(ex, monkeypatch):
    assert "tailcut" in joblib.parallel.BACKENDS
    seen = recorded(ex, monkeypatch)
    with joblib.parallel_backend("tailcut", executor=ex):
        out = joblib.Parallel(n_jobs=-1)(joblib.delayed(cube)(i) for i in range(40))
    assert out == [i ** 3 for i in range(40)]
    assert seen and sum(s["calls"] for s in seen) == 40  # every call, in joblib's batches
    assert not any(s["idempotent"] for s in seen)  # a plain function may have side effects
    assert all(s["task_class"].startswith("python:joblib:") and "cube" in s["task_class"] for s in seen)
    assert joblib_backend.TailcutBackend(executor=ex).effective_n_jobs(-1) == 2  # the cluster's Python slots


def test_idempotent_only_where_pure(ex, monkeypatch):
    from sklearn.model_selection._validation import _fit_and_score
    from sklearn.utils.parallel import delayed as sk_delayed

    assert joblib_backend.is_pure(_fit_and_score)
    assert joblib_backend.is_pure(sk_delayed(_fit_and_score)(None)[0])  # sklearn's wrapper, unwrapped
    assert joblib_backend.is_pure(marked) and not joblib_backend.is_pure(cube)
    seen = recorded(ex, monkeypatch)
    with joblib.parallel_backend("tailcut", executor=ex):
        assert joblib.Parallel(n_jobs=2)(joblib.delayed(marked)(i) for i in range(4)) == [0, -1, -2, -3]
    assert seen and all(s["idempotent"] for s in seen)
    seen.clear()
    with joblib.parallel_backend("tailcut", executor=ex, idempotent=True):
        joblib.Parallel(n_jobs=2)(joblib.delayed(cube)(i) for i in range(4))
    assert seen and all(s["idempotent"] for s in seen)


def test_errors_surface_and_sharedmem_is_refused(ex):
    with joblib.parallel_backend("tailcut", executor=ex):
        with pytest.raises(ZeroDivisionError):
            joblib.Parallel(n_jobs=2)(joblib.delayed(divmod)(1, d) for d in (1, 0, 2))
    with pytest.raises(ValueError, match="cannot share memory"):
        joblib_backend.TailcutBackend(executor=ex).configure(n_jobs=2, require="sharedmem")
    with pytest.raises(TypeError, match="either executor= or the options"):
        joblib_backend.TailcutBackend(executor=ex, scheduler="tcp://127.0.0.1:1")


def test_grid_search_gives_the_same_best_params_as_joblibs_default(ex):
    sklearn = pytest.importorskip("sklearn", reason="needs scikit-learn (Debian: python3-sklearn)")
    from sklearn.datasets import load_iris
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import SVC

    X, y = load_iris(return_X_y=True)  # ships with scikit-learn: no download
    grid = {"C": [0.1, 1, 10], "gamma": [0.01, 0.1, 1]}

    def search():
        return GridSearchCV(SVC(), grid, cv=3, n_jobs=-1).fit(X, y)

    local = search()  # joblib's default backend (loky)
    with joblib.parallel_backend("tailcut", executor=ex):
        remote = search()
    assert remote.best_params_ == local.best_params_
    assert remote.best_score_ == pytest.approx(local.best_score_)
    assert list(remote.cv_results_["mean_test_score"]) == pytest.approx(list(local.cv_results_["mean_test_score"]))
    assert sklearn.__version__


def test_registered_when_joblib_is_imported_after_tailcut():
    import subprocess

    code = ("import sys, tailcut; assert 'joblib' not in sys.modules; import joblib; "
            "print('tailcut' in joblib.parallel.BACKENDS)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "True", out.stderr
