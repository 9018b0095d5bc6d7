"""The command line, model files and one-vs-rest (also on a Dask cluster)."""
import json
import pickle

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file, load_digits

from structfs import OneVsRestStructSVM, StructSVM, load_model, save_model
from structfs.cli import main


@pytest.fixture(scope="module")
def digits_files(tmp_path_factory):
    d = load_digits()
    X, y = d.data[:600] / 16.0, d.target[:600]
    root = tmp_path_factory.mktemp("svmlight")
    files = {}
    for name, (Xp, yp) in {"bin.train": (X[:400], np.where(y[:400] == 3, 1, -1)),
                           "bin.test": (X[400:], np.where(y[400:] == 3, 1, -1)),
                           "multi.train": (X[:400], y[:400] % 3), "multi.test": (X[400:], y[400:] % 3)}.items():
        files[name] = root / name
        dump_svmlight_file(Xp, yp, str(files[name]), zero_based=False, comment="written by the structfs tests")
    files["root"] = root
    return files


def test_train_predict_evaluate_binary(digits_files, capsys):
    model = digits_files["root"] / "bin.model"
    assert main(["train", "-c", "100", "-l", "1", "-v", "0", str(digits_files["bin.train"]), str(model)]) == 0
    out = digits_files["root"] / "bin.pred"
    assert main(["predict", str(digits_files["bin.test"]), str(model), str(out)]) == 0
    scores = np.loadtxt(out)
    clf = load_model(model)
    from sklearn.datasets import load_svmlight_file
    Xt, yt = load_svmlight_file(str(digits_files["bin.test"]), n_features=64, zero_based=False)
    assert np.allclose(scores, clf.decision_function(Xt), atol=1e-8)
    capsys.readouterr()
    assert main(["evaluate", str(digits_files["bin.test"]), str(model)]) == 0
    printed = capsys.readouterr().out
    for line in ("Zero/one-error on test set:", "Accuracy:", "Precision:", "Recall:", "F1:", "PRBEP:", "ROCArea:",
                 "AvgPrec:", "Prec@k:", "Rec@k:"):       # svm_perf_classify's lines, then k of Prec@k / Rec@k
        assert line in printed
    assert "x the positives)" in printed and "(k = " in printed


def test_multiclass_is_one_vs_rest_with_a_column_per_class(digits_files):
    model = digits_files["root"] / "multi.model"
    assert main(["train", "-c", "10", "-v", "0", "-j", "2", str(digits_files["multi.train"]), str(model)]) == 0
    out = digits_files["root"] / "multi.pred"
    assert main(["predict", str(digits_files["multi.test"]), str(model), str(out)]) == 0
    assert np.loadtxt(out).shape == (200, 3)
    assert json.loads(model.read_text())["kind"] == "one-vs-rest"


def test_path_prints_a_table(digits_files, capsys, tmp_path):
    assert main(["path", str(digits_files["bin.train"]), "--test", str(digits_files["bin.test"]), "-c", "10",
                 "--budgets", "2", "8", "--plot", str(tmp_path / "p.png")]) == 0
    out = capsys.readouterr().out
    assert "#features" in out and (tmp_path / "p.png").exists()


@pytest.mark.parametrize("argv_tail,message", [
    (["train", "MISSING", "m"], "no such file"),
    (["train", "BADLINE", "m"], "line 2"),
    (["train", "-l", "7", "TRAIN", "m"], "unknown SVMperf loss code 7"),
    (["train", "-l", "f2", "TRAIN", "m"], "unknown loss"),
    (["train", "-c", "-1", "TRAIN", "m"], "'C' parameter"),
    (["evaluate", "TRAIN", "TRUNCATED"], "corrupt or truncated"),
    (["evaluate", "TRAIN", "FUTURE"], "version"),
])
def test_errors_are_one_line_without_traceback(digits_files, tmp_path, capsys, argv_tail, message):
    bad = tmp_path / "bad.txt"
    bad.write_text("1 1:0.5 2:1\n-1 1:0.5 two:1\n")
    good_model = tmp_path / "good.model"
    save_model(StructSVM(C=10.0).fit(np.eye(4), [0, 1, 0, 1]), good_model)
    truncated = tmp_path / "trunc.model"
    truncated.write_text(good_model.read_text()[:50])
    future = tmp_path / "future.model"
    doc = json.loads(good_model.read_text())
    doc["format_version"] = 99
    future.write_text(json.dumps(doc))
    names = {"MISSING": str(tmp_path / "nope"), "BADLINE": str(bad), "TRAIN": str(digits_files["bin.train"]),
             "TRUNCATED": str(truncated), "FUTURE": str(future), "m": str(tmp_path / "m.model")}
    code = main([names.get(a, a) for a in argv_tail])
    err = capsys.readouterr().err
    assert code != 0
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_model_file_round_trip_and_pickle(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 5))
    y = np.where(X[:, 0] > 0, "yes", "no")
    clf = StructSVM(loss="prec@k", loss_params={"k": 10}, C=50.0, budget=2).fit(X, y)
    save_model(clf, tmp_path / "m.json")
    back = load_model(tmp_path / "m.json")
    assert np.allclose(back.decision_function(X), clf.decision_function(X))
    assert list(back.classes_) == ["no", "yes"] and back.loss_.params["k"] == 10
    assert np.array_equal(pickle.loads(pickle.dumps(clf)).predict(X), clf.predict(X))


@pytest.mark.slow
def test_one_vs_rest_on_a_dask_cluster_matches_local():
    distributed = pytest.importorskip("distributed")
    from joblib import parallel_backend

    rng = np.random.default_rng(1)
    X = rng.normal(size=(90, 4)) + np.repeat(np.eye(3, 4) * 3, 30, axis=0)
    y = np.repeat([0, 1, 2], 30)
    local = OneVsRestStructSVM(estimator=StructSVM(C=10.0), n_jobs=1).fit(X, y)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster):
        with parallel_backend("dask"):
            remote = OneVsRestStructSVM(estimator=StructSVM(C=10.0), n_jobs=2).fit(X, y)
    assert np.allclose(local.decision_function(X), remote.decision_function(X))
    assert (remote.predict(X) == y).mean() > 0.9


def test_usage_errors_are_one_line(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["train", "-c", "abc", "x", "y"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1 and "-c" in err


def test_convergence_plot_from_history(tmp_path):
    pytest.importorskip("matplotlib")
    from structfs.plotting import plot_convergence

    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    clf = StructSVM(C=10.0).fit(X, (X[:, 0] > 0).astype(int))
    out = plot_convergence(clf.history_, out=str(tmp_path / "conv.png"))
    assert (tmp_path / "conv.png").stat().st_size > 1000 and out.endswith("conv.png")


def test_train_with_budget_max_outer_caps_the_selection(digits_files):
    model = digits_files["root"] / "capped.model"
    assert main(["train", "-c", "100", "-B", "2", "--max-outer", "3", "--refit", "100", "-v", "0",
                 str(digits_files["bin.train"]), str(model)]) == 0
    clf = load_model(model)
    assert 0 < len(clf.selected_features_) <= 3 * 2
    assert clf.max_outer == 3 and clf.refit == 100.0


def test_train_max_features_is_kept_in_the_model_file_and_needs_a_budget(digits_files, capsys):
    model = digits_files["root"] / "maxfeat.model"
    assert main(["train", "-c", "100", "-B", "2", "--max-outer", "50", "--max-features", "5", "-v", "0",
                 str(digits_files["bin.train"]), str(model)]) == 0
    clf = load_model(model)
    assert len(clf.selected_features_) == 5 and clf.max_features == 5
    assert main(["train", "--max-features", "5", "-v", "0", str(digits_files["bin.train"]), str(model)]) != 0
    assert "max_features needs a budget" in capsys.readouterr().err


@pytest.mark.parametrize("code", ["4", "5"])
def test_svmperf_codes_4_and_5_train_a_nonzero_model_on_balanced_data(tmp_path, code):
    """svm_perf's Prec@k (a + b >= k) and Rec@k (a + b <= k): on balanced data the default Rec@k k = 2P
    reaches n, which the old exact-k definition made degenerate (a zero model)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 6))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=120) > 0, 1, -1)
    assert abs((y > 0).mean() - 0.5) < 0.1
    train, model = tmp_path / "bal.train", tmp_path / f"bal{code}.model"
    dump_svmlight_file(X, y, str(train), zero_based=False)
    for p in ("0", "0.5"):          # --p 0 means svm_perf's default fraction
        assert main(["train", "-c", "100", "-l", code, "--p", p, "-v", "0", str(train), str(model)]) == 0
        clf = load_model(model)
        assert np.count_nonzero(clf.coef_) > 0
        scores = clf.decision_function(X)
        assert np.ptp(scores) > 0
        assert np.corrcoef(scores, X[:, 0] + 0.5 * X[:, 1])[0, 1] > 0.9


def test_cli_cannot_lose_work_or_data(digits_files, tmp_path, capsys):
    train, test = str(digits_files["bin.train"]), str(digits_files["bin.test"])
    before = open(test).read()
    model = tmp_path / "m.json"
    assert main(["train", "-c", "10", "-v", "0", train, str(model)]) == 0
    assert main(["predict", test, str(model), test]) == 1                      # would overwrite the data
    assert open(test).read() == before and "overwritten" in capsys.readouterr().err
    assert main(["train", "-v", "0", train, str(tmp_path)]) == 1              # a directory: refused first
    assert "directory" in capsys.readouterr().err
    assert main(["train", "-v", "0", train, str(tmp_path / "no" / "such" / "m.json")]) == 1
    assert "no such directory" in capsys.readouterr().err


def test_predict_ignores_unseen_features_and_evaluate_checks_labels(digits_files, tmp_path, capsys):
    from sklearn.datasets import load_svmlight_file

    model = tmp_path / "m.json"
    assert main(["train", "-c", "10", "-v", "0", str(digits_files["bin.train"]), str(model)]) == 0
    X, y = load_svmlight_file(str(digits_files["bin.test"]), n_features=64, zero_based=False)
    wide = tmp_path / "wide.test"
    X_wide = np.hstack([X.toarray(), np.ones((X.shape[0], 3))])                # 3 features the model never saw
    dump_svmlight_file(X_wide, y, str(wide), zero_based=False)
    out = tmp_path / "p.txt"
    assert main(["predict", str(wide), str(model), str(out)]) == 0
    assert "ignored" in capsys.readouterr().err
    assert np.allclose(np.loadtxt(out), load_model(model).decision_function(X), atol=1e-8)
    relabelled = tmp_path / "relabelled.test"
    dump_svmlight_file(X, np.where(y > 0, 2, 1), str(relabelled), zero_based=False)
    assert main(["evaluate", str(relabelled), str(model)]) == 1
    assert "not the model's classes" in capsys.readouterr().err


def test_help_does_not_import_the_numerical_stack():
    import subprocess
    import sys

    code = ("import sys, structfs.cli as c\n"
            "try:\n    c.main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('numba', 'sklearn', 'scipy', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_ctrl_c_and_overflowing_values_end_in_one_line(digits_files, tmp_path, capsys, monkeypatch):
    import structfs.cli as cli

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_train", interrupted)
    assert cli.main(["train", str(digits_files["bin.train"]), str(tmp_path / "m.json")]) == 130
    err = capsys.readouterr().err
    assert err.strip() == "structfs train: interrupted"


@pytest.mark.slow
def test_demo_compares_with_the_practitioners_baselines_and_draws_its_plot(tmp_path, capsys):
    assert main(["demo", "--plot", str(tmp_path / "demo.png")]) == 0
    out = capsys.readouterr().out
    for text in ('StructSVMCV(loss="f1")', "logistic regression, tuned threshold", "LinearSVC (balanced)",
                 "L1-LinearSVC (balanced)", "macro-F1", "features", "seconds"):
        assert text in out
    assert (tmp_path / "demo.png").stat().st_size > 1000


def test_retrieval_losses_train_with_beta_and_evaluate_prints_ap_and_pauc(digits_files, tmp_path, capsys):
    from sklearn.datasets import load_svmlight_file
    from sklearn.metrics import average_precision_score

    model = tmp_path / "pauc.model"
    assert main(["train", "-l", "pauc", "--beta", "0.2", "-c", "100", "-B", "3", "-v", "0",
                 str(digits_files["bin.train"]), str(model)]) == 0
    assert load_model(model).loss_params == {"beta": 0.2}
    capsys.readouterr()
    assert main(["evaluate", "--beta", "0.2", str(digits_files["bin.test"]), str(model)]) == 0
    printed = capsys.readouterr().out
    Xt, yt = load_svmlight_file(str(digits_files["bin.test"]), n_features=64, zero_based=False)
    ap = 100 * average_precision_score(yt, load_model(model).decision_function(Xt))
    assert f"AvgPrec:   {ap:6.2f}" in printed and "pAUC" in printed and "up to 0.2" in printed
    assert main(["evaluate", "--beta", "1.5", str(digits_files["bin.test"]), str(model)]) == 1
    assert "--beta must be in (0, 1]" in capsys.readouterr().err
    assert main(["train", "-l", "ap", "-v", "0", str(digits_files["bin.train"]), str(tmp_path / "ap.model")]) == 0


def test_hashed_feature_indices_train_predict_and_evaluate_in_the_data_size(tmp_path, capsys):
    """Feature indices up to 10^8 (hashing): the model has a sparse coef_, the file its nonzeros, and
    train/predict/evaluate never build a vector over the index space (2^31 - 1 works the same way:
    0.7 s fit, ~270 MB)."""
    data = tmp_path / "hashed.svm"
    data.write_text("1 3:0.5 100000000:1\n-1 5:1 100000000:0.2\n1 100000000:0.7\n-1 4:1\n")
    model, pred = tmp_path / "hashed.model", tmp_path / "hashed.pred"
    assert main(["train", "-c", "10", str(data), str(model)]) == 0
    doc = json.loads(model.read_text())
    assert doc["n_features"] == 10 ** 8 and len(doc["models"][0]["indices"]) <= 4
    assert main(["predict", str(data), str(model), str(pred)]) == 0
    scores = np.loadtxt(pred)
    assert scores.shape == (4,) and np.all((scores > 0) == np.array([1, 0, 1, 0], bool))
    capsys.readouterr()
    assert main(["evaluate", str(data), str(model)]) == 0 and "F1" in capsys.readouterr().out


def test_a_feature_index_above_2_31_is_a_one_line_error_naming_file_and_line(tmp_path, capsys):
    data = tmp_path / "over.svm"
    data.write_text("-1 2:1\n1 4294967297:1\n")
    assert main(["train", str(data), str(tmp_path / "m.json")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "line 2: feature index 4294967297 exceeds 2^31 - 1" in err


def test_shard_then_train_predict_evaluate_out_of_core(digits_files, tmp_path, capsys):
    """`structfs shard` + train/predict/evaluate on the shard directory give the in-memory model's scores."""
    shards = tmp_path / "bin.shards"
    assert main(["shard", str(digits_files["bin.train"]), str(shards), "--shard-mb", "0.02", "-v", "0"]) == 0
    assert len(list(shards.glob("shard-*.data.npy"))) > 2
    disk_model, mem_model = tmp_path / "disk.model", tmp_path / "mem.model"
    common = ["-c", "100", "-B", "3", "--max-outer", "4", "-v", "0"]
    assert main(["train", *common, str(shards), str(disk_model)]) == 0
    assert main(["train", *common, str(digits_files["bin.train"]), str(mem_model)]) == 0
    disk, mem = load_model(disk_model), load_model(mem_model)
    assert np.array_equal(disk.selected_features_, mem.selected_features_)
    assert np.allclose(disk.coef_, mem.coef_, rtol=1e-9, atol=1e-12)
    test_shards = tmp_path / "test.shards"
    assert main(["shard", str(digits_files["bin.test"]), str(test_shards), "-v", "0"]) == 0
    a, b = tmp_path / "a.pred", tmp_path / "b.pred"
    assert main(["predict", str(test_shards), str(disk_model), str(a)]) == 0
    assert main(["predict", str(digits_files["bin.test"]), str(disk_model), str(b)]) == 0
    assert np.allclose(np.loadtxt(a), np.loadtxt(b), atol=1e-8)
    capsys.readouterr()
    assert main(["evaluate", str(test_shards), str(disk_model)]) == 0
    assert "F1" in capsys.readouterr().out
    # no budget, an existing output directory: one-line errors before any work
    assert main(["train", "-v", "0", str(shards), str(tmp_path / "x.model")]) == 1
    assert "budget" in capsys.readouterr().err
    assert main(["shard", str(digits_files["bin.train"]), str(shards), "-v", "0"]) == 1
    assert "not an empty directory" in capsys.readouterr().err


def test_train_cv_chooses_by_cross_validation_and_saves_each_class_refitted_model(digits_files, capsys):
    from sklearn.datasets import load_svmlight_file

    from structfs import StructSVMCV

    Xt, _ = load_svmlight_file(str(digits_files["multi.test"]), n_features=64, zero_based=False)
    X, y = load_svmlight_file(str(digits_files["multi.train"]), n_features=64, zero_based=False)
    model = digits_files["root"] / "multi-cv.model"
    assert main(["train", "--cv", "3", "-B", "2", "--max-outer", "3", str(digits_files["multi.train"]),
                 str(model)]) == 0
    assert "chosen by 3-fold cross-validation" in capsys.readouterr().out
    loaded = load_model(model)
    ours = OneVsRestStructSVM(estimator=StructSVMCV(budgets=[2], max_outer=3)).fit(X, y)
    assert np.allclose(loaded.decision_function(Xt), ours.decision_function(Xt))
    for saved, searched in zip(loaded.estimators_, ours.estimators_):      # each class keeps its own choice
        assert saved.get_params() == searched.estimator_.get_params()
    assert json.loads(model.read_text())["format_version"] == 3
    binary = digits_files["root"] / "bin-cv.model"
    assert main(["train", "--cv", "2", "-c", "100", "-B", "2", "--max-outer", "3", "-v", "0",
                 str(digits_files["bin.train"]), str(binary)]) == 0
    assert load_model(binary).C == 100.0 and json.loads(binary.read_text())["format_version"] == 2
    for bad, what in ((["--cv", "1"], "--cv must be at least 2"), (["--cv", "3", "--refit", "10"], "--refit")):
        assert main(["train", *bad, str(digits_files["bin.train"]), str(binary)]) == 1
        assert what in capsys.readouterr().err


def test_svm_perf_options_w_and_y_are_accepted(digits_files, tmp_path, capsys):
    model = tmp_path / "m.json"
    assert main(["train", "-w", "3", "-y", "0", "-c", "100", str(digits_files["bin.train"]), str(model)]) == 0
    assert "-w 3" in capsys.readouterr().err and model.exists()


@pytest.mark.parametrize("option,value,reason", [
    ("-t", "2", "linear models"), ("-g", "0.5", "linear models"), ("--i", "1", "linear models"),
    ("-k", "100", "solver"), ("-f", "10", "solver"), ("-#", "100", "solver"), ("-a", "alphas.txt", "primal"),
    ("-p", "2", "L1-slack"), ("-o", "1", "margin rescaling"),
])
def test_svmperf_options_without_a_meaning_are_refused_with_the_reason(digits_files, tmp_path, capsys, option, value,
                                                                      reason):
    code = main(["train", option, value, str(digits_files["bin.train"]), str(tmp_path / "m.json")])
    err = capsys.readouterr().err
    assert code == 2 and f"svm_perf's {option}" in err and reason in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "m.json").exists()


def test_svmperf_defaults_spelled_out_are_accepted(digits_files, tmp_path):
    model = tmp_path / "m.json"
    assert main(["train", "-c", "100", "-p", "1", "-o", "2", "-w", "9", "-y", "0", "-v", "0", "--b", "1",
                 str(digits_files["bin.train"]), str(model)]) == 0
    assert main(["evaluate", "-v", "1", str(digits_files["bin.test"]), str(model)]) == 0


def test_predict_prints_svm_perf_classifys_report_when_the_labels_are_known(digits_files, tmp_path, capsys):
    model = tmp_path / "m.json"
    assert main(["train", "-c", "100", "-v", "0", str(digits_files["bin.train"]), str(model)]) == 0
    capsys.readouterr()
    assert main(["predict", str(digits_files["bin.test"]), str(model), str(tmp_path / "p.txt")]) == 0
    assert "Zero/one-error on test set:" in capsys.readouterr().out
    assert main(["predict", "-v", "0", str(digits_files["bin.test"]), str(model), str(tmp_path / "q.txt")]) == 0
    assert capsys.readouterr().out == ""
    assert (tmp_path / "p.txt").read_text() == (tmp_path / "q.txt").read_text()


def test_compile_warms_the_kernels_and_says_how_long(capsys):
    from structfs.warmup import kernels_cached

    assert main(["compile"]) == 0
    assert "done in" in capsys.readouterr().out and kernels_cached()


def test_a_reader_that_stops_reading_ends_the_report_quietly(digits_files, tmp_path):
    """`structfs evaluate ... | head -2`: when the reader closes the pipe, structfs ends as cat does
    (status 141, nothing on stderr) instead of printing "error: [Errno 32] Broken pipe"."""
    import subprocess
    import sys

    model = tmp_path / "m.json"
    assert main(["train", "-c", "10", "-v", "0", str(digits_files["bin.train"]), str(model)]) == 0
    proc = subprocess.Popen([sys.executable, "-m", "structfs", "evaluate", str(digits_files["bin.test"]), str(model)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()                      # the reader is gone before the report is written
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and err == ""


def test_train_pos_label_measures_the_class_it_names(digits_files, tmp_path, capsys):
    """`train --pos-label -1` optimises the F1 of class -1 and `evaluate` reports that class's measures;
    the same file with the labels swapped gives the same report."""
    from sklearn.datasets import dump_svmlight_file, load_svmlight_file

    X, y = load_svmlight_file(str(digits_files["bin.train"]), n_features=64, zero_based=False)
    Xt, yt = load_svmlight_file(str(digits_files["bin.test"]), n_features=64, zero_based=False)
    swapped, swapped_test = tmp_path / "s.train", tmp_path / "s.test"
    dump_svmlight_file(X, -y, str(swapped), zero_based=False)
    dump_svmlight_file(Xt, -yt, str(swapped_test), zero_based=False)
    reports = []
    for train, test, extra in ((digits_files["bin.train"], digits_files["bin.test"], []),
                               (swapped, swapped_test, ["--pos-label", "-1"])):
        model = tmp_path / f"m{len(reports)}.json"
        assert main(["train", "-c", "100", "-v", "0", *extra, str(train), str(model)]) == 0
        capsys.readouterr()
        assert main(["evaluate", str(test), str(model)]) == 0
        reports.append([line for line in capsys.readouterr().out.splitlines() if line.startswith(("F1", "Precision"))])
    assert reports[0] == reports[1] and reports[0]
    assert main(["train", "--pos-label", "3", str(digits_files["bin.train"]), str(tmp_path / "x.json")]) == 1


def balanced_error(a, b, c, d):
    return 50.0 * (c / np.maximum(a + c, 1) + b / np.maximum(b + d, 1))


def test_train_with_a_loss_function_named_module_function(digits_files, tmp_path, capsys):
    model = tmp_path / "m.json"
    assert main(["train", "-c", "100", "-l", f"{__name__}:balanced_error", "-v", "0", str(digits_files["bin.train"]),
                 str(model)]) == 0
    loaded = load_model(model)
    assert loaded.loss.fn is balanced_error
    assert main(["predict", str(digits_files["bin.test"]), str(model), str(tmp_path / "p.txt")]) == 0
    assert main(["train", "-l", "no_such_module_xyz:fn", "-v", "0", str(digits_files["bin.train"]),
                 str(model)]) != 0
    assert "cannot be imported" in capsys.readouterr().err
