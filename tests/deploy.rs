//! The scale-out scripts in `deploy/`, run as they are: the Kubernetes Indexed Job's pod command
//! for every completion index and then the merge Job's script, and the Slurm array script for
//! every task and then `merge` (directly and through a container runtime). Each merged table
//! must equal a single `sightline precompute` run byte for byte.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_sightline");

/// Small enough for the test, on the CPU so that every run uses the same backend.
const SETTINGS: [(&str, &str); 4] = [
    ("SCENE", "rock"),
    ("SPACING", "4"),
    ("BACKEND", "cpu"),
    ("TABLE", "rock"),
];

/// A fresh folder under the system temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("sightline-deploy-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{cmd:?} failed: {text}");
    text
}

/// The table a single run writes.
fn single_run(dir: &Path) -> Vec<u8> {
    let out = dir.join("single.slt");
    let mut cmd = Command::new(BIN);
    cmd.arg("precompute");
    for (name, value) in &SETTINGS[..3] {
        cmd.arg(format!("--{}={value}", name.to_lowercase()));
    }
    run(cmd.arg("--out").arg(&out));
    std::fs::read(out).unwrap()
}

// ---- a line-based reading of the two Jobs in deploy/k8s-indexed-job.yaml ----

/// One container of a Job: its env values, command and args (a block scalar is one arg).
#[derive(Debug, Default)]
struct Container {
    completions: Option<usize>,
    env: HashMap<String, String>,
    command: Vec<String>,
    args: Vec<String>,
    mount: Option<String>,
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// A scalar without its trailing comment and quotes.
fn scalar(text: &str) -> String {
    let text = text.split(" #").next().unwrap().trim();
    text.trim_matches('"').to_string()
}

/// The documents of the manifest whose `metadata.name` is `name`.
fn job(yaml: &str, name: &str) -> Container {
    let doc = yaml
        .split("\n---\n")
        .find(|d| d.contains(&format!("\n  name: {name}\n")))
        .unwrap_or_else(|| panic!("no Job named {name}"));
    let lines: Vec<&str> = doc.lines().collect();
    let mut c = Container::default();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let t = line.trim_start();
        if let Some(v) = t.strip_prefix("completions:") {
            c.completions = Some(scalar(v).parse().unwrap());
        } else if let Some(v) = t.strip_prefix("- name: ") {
            if let Some(value) = lines
                .get(i + 1)
                .and_then(|l| l.trim().strip_prefix("value:"))
            {
                c.env.insert(scalar(v), scalar(value));
            }
        } else if let Some(v) = t.strip_prefix("command:") {
            c.command = serde_json::from_str(&scalar(v)).unwrap();
        } else if let Some(v) = t.strip_prefix("mountPath:") {
            c.mount = Some(scalar(v));
        } else if t == "args:" {
            let depth = indent(line);
            while i + 1 < lines.len() && indent(lines[i + 1]) > depth {
                i += 1;
                let item = lines[i].trim_start().strip_prefix("- ").unwrap();
                if item == "|" {
                    let block = indent(lines[i + 1]);
                    let mut text = String::new();
                    while i + 1 < lines.len()
                        && (lines[i + 1].trim().is_empty() || indent(lines[i + 1]) >= block)
                    {
                        i += 1;
                        text.push_str(lines[i].get(block..).unwrap_or(""));
                        text.push('\n');
                    }
                    c.args.push(text);
                } else {
                    c.args.push(scalar(item));
                }
            }
        }
        i += 1;
    }
    c
}

/// Kubernetes' expansion of `$(NAME)` in command and args: defined names are replaced, `$$`
/// is a `$`, anything else is left as written (so shell `$((k + 1))` survives).
fn expand(text: &str, env: &HashMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if let Some(r) = rest.strip_prefix("$$") {
            out.push('$');
            rest = r;
            continue;
        }
        let name = rest
            .strip_prefix("$(")
            .and_then(|r| r.split_once(')'))
            .and_then(|(n, _)| env.get(n).map(|v| (n.len(), v)));
        match name {
            Some((len, value)) => {
                out.push_str(value);
                rest = &rest[len + 3..];
            }
            None => {
                out.push('$');
                rest = &rest[1..];
            }
        }
    }
    out + rest
}

/// Runs the Indexed Job for every index, then the merge Job; returns the merged table.
fn run_kubernetes(dir: &Path) -> Vec<u8> {
    let yaml = std::fs::read_to_string(repo("deploy/k8s-indexed-job.yaml")).unwrap();
    let pre = job(&yaml, "sightline-precompute");
    let merge = job(&yaml, "sightline-merge");
    let n = pre.completions.expect("completions");
    for c in [&pre, &merge] {
        assert_eq!(
            c.env["SHARDS"],
            n.to_string(),
            "SHARDS must equal completions"
        );
        assert_eq!(c.mount.as_deref(), Some("/tables"));
    }
    for (name, _) in SETTINGS {
        assert!(
            pre.env.contains_key(name),
            "the precompute Job sets no {name}"
        );
    }
    assert_eq!(pre.env["TABLE"], merge.env["TABLE"]);
    assert_eq!(pre.command, ["sightline"]);
    assert_eq!(merge.command, ["sh", "-c"]);
    assert_eq!(merge.args.len(), 1, "{:?}", merge.args);

    let tables = dir.join("tables");
    std::fs::create_dir_all(&tables).unwrap();
    let tables_str = tables.to_str().unwrap();
    let mut env = pre.env.clone();
    env.extend(SETTINGS.map(|(k, v)| (k.to_string(), v.to_string())));
    for index in 0..n {
        env.insert("JOB_COMPLETION_INDEX".into(), index.to_string());
        let args = pre
            .args
            .iter()
            .map(|a| expand(a, &env).replace("/tables", tables_str));
        run(Command::new(BIN).args(args).envs(&env));
    }

    // The merge script calls `sightline`: a folder on PATH holds it under that name.
    let bin_dir = dir.join("bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    std::os::unix::fs::symlink(BIN, bin_dir.join("sightline")).unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap());
    let mut env = merge.env.clone();
    env.extend(SETTINGS.map(|(k, v)| (k.to_string(), v.to_string())));
    let script = expand(&merge.args[0], &env).replace("/tables", tables_str);
    let out = run(Command::new("sh")
        .arg("-c")
        .arg(script)
        .envs(&env)
        .env("PATH", path));
    assert!(out.contains(&format!("merged {n} shards")), "{out}");
    std::fs::read(tables.join("rock.slt")).unwrap()
}

/// Runs `deploy/slurm-array.sh` for every array task, then with `merge`. `container` is a
/// stand-in for `apptainer` to run it through, with the image name it must be given.
fn run_slurm(dir: &Path, container: Option<(&Path, &str)>) -> Vec<u8> {
    let script = repo("deploy/slurm-array.sh");
    let text = std::fs::read_to_string(&script).unwrap();
    let array = text
        .lines()
        .find_map(|l| l.strip_prefix("#SBATCH --array=0-"))
        .expect("#SBATCH --array");
    let n = scalar(array).parse::<usize>().unwrap() + 1;
    let out_dir = dir.join("tables");
    let bash = |args: &[&str], vars: &[(&str, String)]| {
        let mut cmd = Command::new("bash");
        cmd.arg(&script).args(args).env("OUT_DIR", &out_dir);
        cmd.envs(SETTINGS).env("SIGHTLINE", BIN);
        if let Some((stub, image)) = container {
            cmd.env("CONTAINER", stub)
                .env("SIGHTLINE_IMAGE", image)
                .env("SIGHTLINE", "/no/binary/outside/the/container");
        }
        run(cmd.envs(vars.iter().map(|(k, v)| (k, v))))
    };
    for task in 0..n {
        let vars = [
            ("SLURM_ARRAY_TASK_ID", task.to_string()),
            ("SLURM_ARRAY_TASK_COUNT", n.to_string()),
        ];
        bash(&[], &vars);
    }
    let out = bash(&["merge"], &[("SHARDS", n.to_string())]);
    assert!(out.contains(&format!("merged {n} shards")), "{out}");
    std::fs::read(out_dir.join("rock.slt")).unwrap()
}

/// A stand-in for `apptainer`: checks `exec [flags] IMAGE sightline ARGS` and runs the binary.
fn container_stub(dir: &Path, image: &str) -> PathBuf {
    let stub = dir.join("apptainer");
    std::fs::write(
        &stub,
        format!(
            "#!/bin/sh\n[ \"$1\" = exec ] || exit 90\nshift\n\
             while [ \"$1\" != '{image}' ]; do [ $# -gt 1 ] || exit 91; shift; done\n\
             shift\n[ \"$1\" = sightline ] || exit 92\nshift\nexec '{BIN}' \"$@\"\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
    stub
}

#[test]
fn kubernetes_and_slurm_scripts_merge_to_a_single_runs_bytes() {
    let dir = TempDir::new("all");
    let single = single_run(&dir.0);
    assert!(single.len() > 1000, "{} bytes", single.len());

    let k8s = TempDir::new("k8s");
    assert!(run_kubernetes(&k8s.0) == single, "Kubernetes merge differs");

    let slurm = TempDir::new("slurm");
    assert!(run_slurm(&slurm.0, None) == single, "Slurm merge differs");

    let image = "/images/sightline.sif";
    let apptainer = TempDir::new("apptainer");
    let stub = container_stub(&apptainer.0, image);
    assert!(
        run_slurm(&apptainer.0, Some((&stub, image))) == single,
        "Slurm merge through the container differs"
    );
}

#[test]
fn kubernetes_expansion_follows_the_rules() {
    let env: HashMap<String, String> = [("A", "1"), ("JOB_COMPLETION_INDEX", "3")]
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .into();
    assert_eq!(
        expand("--shard=$(JOB_COMPLETION_INDEX)/$(A)", &env),
        "--shard=3/1"
    );
    assert_eq!(
        expand("k=$((k + 1)) $(B) $$(A) $", &env),
        "k=$((k + 1)) $(B) $(A) $"
    );
}
