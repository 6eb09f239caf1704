"""Ray Serve without starting Ray: the repository's Serve config is valid and builds the application,
bad --ray flags are one line, and without `ray[serve]` installed paradec imports and `serve --ray` says
what to install (the default install has no Ray)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from paradec import cli, methods

ray = pytest.importorskip("ray")
from ray.serve.schema import ServeDeploySchema  # noqa: E402

from paradec import ray_serve  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def test_the_serve_config_is_valid_and_builds_the_application():
    config = ServeDeploySchema.model_validate(yaml.safe_load((ROOT / "deploy" / "serve.yaml").read_text()))
    [app] = config.applications
    assert app.name == ray_serve.APP and app.import_path == "paradec.ray_serve:app_builder"
    ray_serve.app_builder(app.args)  # binds the deployments: no cluster, no model loaded


@pytest.mark.parametrize("flags, words", [(["--replicas", "0"], "--replicas 1 or more"),
                                          (["--replicas", "3", "--max-replicas", "2"], "at most --max-replicas"),
                                          (["--queue", "0"], "--queue 1 or more"),
                                          (["--engine", "vllm=http://127.0.0.1:9"], "without --ray")])
def test_bad_ray_flags_are_one_line(capsys, flags, words):
    assert cli.main(["serve", "--ray", *flags]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1


def test_without_ray_paradec_imports_and_serve_ray_says_what_to_install():
    code = ("import sys; sys.modules['ray'] = None; import paradec.serve, paradec.cli; "
            "sys.exit(paradec.cli.main(['serve', '--ray']))")  # None in sys.modules: `import ray` fails
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.strip() == ("paradec: error: --ray needs Ray Serve: "
                                                       "pip install -r requirements-ray.txt"), r.stderr


def test_build_refuses_what_ray_could_not_run():
    with pytest.raises(methods.InputError, match="needs a model"):
        ray_serve.build([], replicas=1)
