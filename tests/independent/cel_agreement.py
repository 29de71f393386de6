#!/usr/bin/env python3
"""The generated Kyverno policies, judged by a CEL engine credlint does not share.

credlint evaluates its rules, and `tests/agreement.rs` evaluates the generated policies, with the
same Rust CEL crate, so a fault of that crate would pass both unseen. This script evaluates the
ValidatingPolicies that `credlint policies` prints with cel-python (`celpy`, pure Python, its own
parser and interpreter), on every object of every fixture file, as Kyverno would at admission of
a CREATE, and compares each verdict with what `credlint check` reports on the object:

    python3 tests/independent/cel_agreement.py CREDLINT_BINARY REPO_ROOT [--verbose]

For every (file, object, policy): the policy denies the object exactly when `credlint check`
reports the policy's rule on it (a finding suppressed by a `credlint.io/ignore` annotation counts
as reported: the policies do not read that annotation), and admits it otherwise. Exit status: 0
when they all agree, 1 when some disagree (each one listed), 2 when the check could not be made
(celpy missing, credlint failing, a policy this script cannot model).

Only the standard library, PyYAML and cel-python (pinned at 0.5.0 by `.ci/run`) are used; the
script reads nothing of credlint's source and runs only its binary.
"""

import datetime
import json
import math
import os
import re
import subprocess
import sys

try:
    import yaml
except ImportError as error:  # pragma: no cover - reported to the caller
    print(f"cel_agreement.py: PyYAML cannot be imported ({error})", file=sys.stderr)
    sys.exit(2)

try:
    import celpy
    from celpy import celtypes
except ImportError as error:  # pragma: no cover - reported to the caller
    print(
        f"cel_agreement.py: cel-python cannot be imported ({error}); "
        "python3 -m pip install cel-python==0.5.0",
        file=sys.stderr,
    )
    sys.exit(2)


# Rules whose findings say the file is not read as the cluster would read it: the whole file is
# left out (credlint reports them, a policy never sees such a file).
FILE_REFUSED = {"yaml-syntax", "yaml-duplicate-key"}
# The API server refuses an object with a `schema` finding before any admission policy.
OBJECT_REFUSED = "schema"


class Unsupported(Exception):
    """A policy uses something this script does not model: the check cannot be made."""


# ---------------------------------------------------------------------------------------------
# The strings extension.
#
# cel-python 0.5.0 has neither `trim()` nor `split()` of the CEL strings extension (the
# Kubernetes and Kyverno CEL environments have both). Where they are missing they are
# registered here as custom functions, written to the semantics the extension gives them: Go's
# strings.TrimSpace and strings.Split / strings.SplitN. Nothing else is added: every other
# function and macro the policies use is cel-python's own.

# unicode.IsSpace in Go: the Unicode White_Space property. Python's str.strip() with no argument
# also strips U+001C..U+001F, which Go keeps, so the set is spelled out.
GO_WHITE_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def cel_trim(text):
    """`s.trim()`: strings.TrimSpace(s)."""
    if not isinstance(text, str):
        return celpy.CELEvalError("no such overload: trim", TypeError, (type(text).__name__,))
    return celtypes.StringType(text.strip(GO_WHITE_SPACE))


def go_split(text, separator, limit=-1):
    """strings.SplitN(text, separator, limit); limit -1 is strings.Split."""
    if limit == 0:
        return []
    if separator == "":
        # Go splits into the characters (UTF-8 sequences); with a limit the last keeps the rest.
        chars = list(text)
        if 0 < limit < len(chars):
            return chars[: limit - 1] + ["".join(chars[limit - 1 :])]
        return chars
    if limit < 0:
        return text.split(separator)
    return text.split(separator, limit - 1)


def cel_split(text, separator, limit=None):
    """`s.split(sep)` and `s.split(sep, n)`."""
    if not isinstance(text, str) or not isinstance(separator, str):
        return celpy.CELEvalError("no such overload: split", TypeError, (type(text).__name__,))
    if limit is None:
        n = -1
    elif isinstance(limit, int) and not isinstance(limit, bool):
        n = int(limit)
    else:
        return celpy.CELEvalError("no such overload: split", TypeError, (type(limit).__name__,))
    return celtypes.ListType([celtypes.StringType(part) for part in go_split(text, separator, n)])


# Where cel-python 0.5.0 itself departs from CEL as Kubernetes and Kyverno evaluate it (cel-go),
# found while writing this check; none of it is patched, so a fixture that reaches one of these
# shows up as a disagreement to look at, not as a silent pass:
# - size(null) is 0 (cel-go: no such overload, an error);
# - `a || b`, `a && b` evaluate both sides, and a macro (all, exists, map, filter) over null
#   raises out of the whole expression, where cel-go would absorb the error (`true || e`);
#   e.g. `resourceNames: ~` on a Role's create rule;
# - int(string) takes Python's literals (' 5', '0x10', '1_000'); the policies only call int()
#   on text a regex has checked;
# - 1 == 1.0 and 1 == 'a' are errors (cel-go: true and false).

ENVIRONMENT = celpy.Environment()


def strings_extension():
    """The custom functions cel-python needs: those of `trim` and `split` it does not have."""
    added = {}
    for name, probe, function in [
        ("trim", "' a '.trim() == 'a'", cel_trim),
        ("split", "'a,b'.split(',') == ['a', 'b']", cel_split),
    ]:
        try:
            native = ENVIRONMENT.program(ENVIRONMENT.compile(probe)).evaluate({})
        except Exception:  # celpy raises its evaluation error for an unknown function
            native = None
        if not (isinstance(native, celtypes.BoolType) and bool(native)):
            added[name] = function
    return added


FUNCTIONS = strings_extension()


def compile_cel(text, where):
    try:
        return ENVIRONMENT.program(ENVIRONMENT.compile(text), functions=FUNCTIONS)
    except Exception as error:
        raise Unsupported(f"{where}: cel-python cannot compile {text!r}: {error}") from error


class Failed:
    """An evaluation error, kept as a value (errors are values in CEL)."""

    def __init__(self, error):
        self.error = error

    def __str__(self):
        text = error_text(self.error)
        return text


def error_text(error):
    # celpy's messages can embed the whole activation; the first argument is the message.
    if isinstance(error, celpy.CELEvalError) and error.args:
        text = str(error.args[0])
    else:
        text = f"{type(error).__name__}: {error}"
    text = text.split(" (in activation", 1)[0]
    return text if len(text) <= 300 else text[:300] + "..."


def run(program, activation):
    """The value of a compiled expression, or Failed."""
    try:
        value = program.evaluate(activation)
    except Exception as error:  # CELEvalError, and anything celpy lets escape
        return Failed(error)
    if isinstance(value, Exception):
        return Failed(value)
    return value


class Variables(celtypes.MapType):
    """`variables`: each one evaluated the first time an expression reads it, then remembered,
    as Kubernetes and Kyverno bind them. An error is remembered as the variable's value, so that
    it fails only the expressions that read it."""

    def __init__(self, programs, activation):
        super().__init__()
        self._programs = programs
        self._activation = activation
        self._evaluating = set()

    def __contains__(self, key):
        return key in self._programs

    def __getitem__(self, key):
        if not dict.__contains__(self, key):
            if key not in self._programs:
                raise KeyError(key)
            if key in self._evaluating:
                return celpy.CELEvalError(f"variable {key} refers to itself", ValueError, None)
            self._evaluating.add(key)
            value = run(self._programs[key], self._activation)
            self._evaluating.discard(key)
            if isinstance(value, Failed):
                value = value.error
                if not isinstance(value, celpy.CELEvalError):
                    value = celpy.CELEvalError(error_text(value), type(value), None)
            dict.__setitem__(self, celtypes.StringType(key), value)
        return dict.__getitem__(self, key)


# ---------------------------------------------------------------------------------------------
# Which resource an object is, as the API server names it in an admission request. The table is
# that of src/lint/kyverno/matching.rs (kinds whose resource is not the kind lowercased with an `s`,
# and cluster-scoped kinds); other kinds are pluralized as kubectl guesses.

KINDS = {
    ("", "Endpoints"): ("endpoints", True),
    ("", "Namespace"): ("namespaces", False),
    ("", "Node"): ("nodes", False),
    ("", "PersistentVolume"): ("persistentvolumes", False),
    ("", "ComponentStatus"): ("componentstatuses", False),
    ("rbac.authorization.k8s.io", "ClusterRole"): ("clusterroles", False),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): ("clusterrolebindings", False),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): ("customresourcedefinitions", False),
    ("apiregistration.k8s.io", "APIService"): ("apiservices", False),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): (
        "validatingwebhookconfigurations",
        False,
    ),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): (
        "mutatingwebhookconfigurations",
        False,
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): (
        "validatingadmissionpolicies",
        False,
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"): (
        "validatingadmissionpolicybindings",
        False,
    ),
    ("storage.k8s.io", "StorageClass"): ("storageclasses", False),
    ("storage.k8s.io", "CSIDriver"): ("csidrivers", False),
    ("storage.k8s.io", "CSINode"): ("csinodes", False),
    ("storage.k8s.io", "VolumeAttachment"): ("volumeattachments", False),
    ("scheduling.k8s.io", "PriorityClass"): ("priorityclasses", False),
    ("networking.k8s.io", "IngressClass"): ("ingressclasses", False),
    ("node.k8s.io", "RuntimeClass"): ("runtimeclasses", False),
    ("certificates.k8s.io", "CertificateSigningRequest"): ("certificatesigningrequests", False),
    ("kyverno.io", "ClusterPolicy"): ("clusterpolicies", False),
    ("policies.kyverno.io", "ValidatingPolicy"): ("validatingpolicies", False),
    ("external-secrets.io", "ClusterSecretStore"): ("clustersecretstores", False),
    ("external-secrets.io", "ClusterExternalSecret"): ("clusterexternalsecrets", False),
}


def resource_of(group, kind, has_namespace):
    if (group, kind) in KINDS:
        return KINDS[(group, kind)]
    lower = kind.lower()
    if lower.endswith("s"):
        plural = lower + "es"
    elif lower.endswith("y"):
        plural = lower[:-1] + "ies"
    else:
        plural = lower + "s"
    return plural, has_namespace or not kind.startswith("Cluster")


# ---------------------------------------------------------------------------------------------
# Policies.

SUPPORTED_SPEC = {
    "validationActions",
    "failurePolicy",
    "matchConstraints",
    "matchConditions",
    "variables",
    "validations",
}


class Policy:
    def __init__(self, document):
        self.name = document["metadata"]["name"]
        if document.get("kind") != "ValidatingPolicy":
            raise Unsupported(f"{self.name}: kind {document.get('kind')!r}")
        spec = document["spec"]
        unknown = set(spec) - SUPPORTED_SPEC
        if unknown:
            raise Unsupported(f"{self.name}: spec fields {sorted(unknown)}")
        actions = spec.get("validationActions") or ["Deny"]
        # A warning rule's policy warns instead of denying: the same failed validation, told
        # to the client rather than refused, so its verdicts are compared alike.
        if "Deny" not in actions and "Warn" not in actions:
            raise Unsupported(f"{self.name}: validationActions {actions} neither deny nor warn")
        self.failure_policy = spec.get("failurePolicy", "Fail")
        if self.failure_policy not in ("Fail", "Ignore"):
            raise Unsupported(f"{self.name}: failurePolicy {self.failure_policy!r}")
        constraints = spec.get("matchConstraints") or {}
        unknown = set(constraints) - {"resourceRules", "matchPolicy", "namespaceSelector"}
        if unknown:
            raise Unsupported(f"{self.name}: matchConstraints fields {sorted(unknown)}")
        # matchPolicy Equivalent (the default): the same group and resource in another version
        # is converted to a listed version by the API server, so it matches too.
        self.equivalent = constraints.get("matchPolicy", "Equivalent") == "Equivalent"
        self.rules = constraints.get("resourceRules") or []
        self.namespace_tests = namespace_tests(self.name, constraints.get("namespaceSelector"))
        for rule in self.rules:
            unknown = set(rule) - {"apiGroups", "apiVersions", "resources", "operations", "scope"}
            if unknown:
                raise Unsupported(f"{self.name}: resourceRules fields {sorted(unknown)}")
        self.conditions = [
            (c["name"], compile_cel(c["expression"], f"{self.name} matchCondition {c['name']}"))
            for c in spec.get("matchConditions") or []
        ]
        self.variables = {
            v["name"]: compile_cel(v["expression"], f"{self.name} variable {v['name']}")
            for v in spec.get("variables") or []
        }
        self.validations = [
            (
                v["expression"],
                compile_cel(v["expression"], f"{self.name} validation {i}"),
            )
            for i, v in enumerate(spec.get("validations") or [])
        ]
        if not self.validations:
            raise Unsupported(f"{self.name}: no validations")

    def selects(self, target):
        """matchConstraints.resourceRules for the request of `target` (its operation)."""
        # A namespace selector never skips a cluster-scoped object (none of these is a Namespace).
        in_scope = not target["namespaced"] or all(
            test(target["namespace"]) for test in self.namespace_tests
        )
        return in_scope and any(self.rule_selects(rule, target) for rule in self.rules)

    def rule_selects(self, rule, target):
        def listed(values, value):
            return any(v == "*" or v == value for v in values or [])

        scope = rule.get("scope", "*")
        return (
            listed(rule.get("apiGroups"), target["group"])
            and (
                listed(rule.get("apiVersions"), target["version"])
                or (self.equivalent and bool(rule.get("apiVersions")))
            )
            and any(r in ("*", "*/*", target["resource"]) for r in rule.get("resources") or [])
            and listed(rule.get("operations"), target["operation"])
            and (scope == "*" or (scope == "Namespaced") == target["namespaced"])
        )

    def decide(self, target):
        """('not-selected' | 'admitted' | 'denied', reasons) for the request of `target`."""
        if not self.selects(target):
            return "not-selected", []
        activation = {
            "object": target["object"],
            "oldObject": target["old"],
            "request": target["request"],
        }
        # matchConditions: any false skips the policy; otherwise an error applies failurePolicy.
        # They are evaluated before the variables exist, and cannot read them.
        errors = []
        for name, program in self.conditions:
            value = run(program, dict(activation))
            if isinstance(value, Failed):
                errors.append(f"matchCondition {name} failed to evaluate: {value}")
            elif not isinstance(value, celtypes.BoolType):
                errors.append(f"matchCondition {name} gave {value!r}, not a bool")
            elif not value:
                return "not-selected", [f"matchCondition {name} is false"]
        if errors:
            return ("denied", errors) if self.failure_policy == "Fail" else ("admitted", errors)
        activation["variables"] = Variables(self.variables, activation)
        reasons = []
        for index, (text, program) in enumerate(self.validations):
            value = run(program, activation)
            if isinstance(value, Failed) or not isinstance(value, celtypes.BoolType):
                problem = value if isinstance(value, Failed) else f"{value!r}, not a bool"
                if self.failure_policy == "Fail":
                    reasons.append(f"validation {index} errs ({problem}): {text}")
            elif not value:
                reasons.append(f"validation {index} is false: {text}")
        return ("denied", reasons) if reasons else ("admitted", [])


def namespace_tests(name, selector):
    """The tests of a namespace selector on `kubernetes.io/metadata.name` (the label the API
    server sets on every namespace: the only one a fixture's namespace can be judged by)."""
    if not selector:
        return []
    unknown = set(selector) - {"matchExpressions"}
    if unknown:
        raise Unsupported(f"{name}: namespaceSelector fields {sorted(unknown)}")
    tests = []
    for expression in selector["matchExpressions"]:
        if expression.get("key") != "kubernetes.io/metadata.name":
            raise Unsupported(f"{name}: namespaceSelector on {expression.get('key')!r}")
        values = set(expression.get("values") or [])
        operator = expression.get("operator")
        if operator == "In":
            tests.append(lambda ns, values=values: ns in values)
        elif operator == "NotIn":
            tests.append(lambda ns, values=values: ns not in values)
        else:
            raise Unsupported(f"{name}: namespaceSelector operator {operator!r}")
    return tests


def load_policies(credlint, root, image):
    args = [credlint, "policies"]
    if image:
        args += ["--credentials-image", image]
    out = subprocess.run(args, cwd=root, capture_output=True, text=True)
    if out.returncode != 0:
        raise Unsupported(f"{' '.join(args[1:])} exited {out.returncode}: {out.stderr.strip()}")
    return [Policy(d) for d in yaml.safe_load_all(out.stdout) if d is not None]


# ---------------------------------------------------------------------------------------------
# Reading manifests as Kubernetes reads them.
#
# kubectl cuts a file into documents at `---` lines, reads each with go-yaml v2 (YAML 1.1
# scalars) and sends it as JSON. PyYAML's loader is YAML 1.1 too, but not the same reader: each
# plain scalar is also resolved here by go-yaml v2's rules, and a file where the two readings
# differ (`y`/`n`, which go-yaml reads as booleans; `08`, `-.5`, `1e3`, `0o17`, which it reads
# as numbers; `1:30`, which PyYAML reads as 90) is left out with the reason, as is a file whose
# merge key (`<<`) would override a key written before it (go-yaml v2 applies a merge where it
# stands, PyYAML lets every written key win). A timestamp-like scalar stays the text written,
# as go-yaml v2 gives it to kubectl. A float with an integral value is sent as an integer (Go's
# JSON encoder writes 1.0 as 1), and the API server decodes it as one.


class SkipFile(Exception):
    """The file depends on something PyYAML reads otherwise than Kubernetes: left out."""


class KubeLoader(yaml.SafeLoader):
    """PyYAML's YAML 1.1 safe loader; plain scalars are marked, timestamps stay text."""

    def compose_scalar_node(self, anchor):
        event = self.peek_event()
        node = super().compose_scalar_node(anchor)
        node.plain_implicit = event.tag in (None, "!") and event.implicit[0]
        return node


KubeLoader.add_constructor(
    "tag:yaml.org,2002:timestamp", lambda loader, node: str(node.value)
)

GO_RESOLVE_MAP = {}
for values, result in [
    (["y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"], True),
    (["n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"], False),
    (["", "~", "null", "Null", "NULL"], None),
    ([".nan", ".NaN", ".NAN"], math.nan),
    ([".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"], math.inf),
    (["-.inf", "-.Inf", "-.INF"], -math.inf),
    (["<<"], "<<merge>>"),
]:
    for value in values:
        GO_RESOLVE_MAP[value] = result

GO_INT_BASE0 = re.compile(r"([+-]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)")
GO_YAML_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
GO_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+\.?[0-9]*)([eE][-+]?[0-9]+)?")
GO_TIMESTAMP_START = re.compile(r"[0-9]{4}-")


def go_parse_int(text):
    """strconv.ParseInt(text, 0, 64), then ParseUint: an int, or None."""
    m = GO_INT_BASE0.fullmatch(text)
    if not m:
        return None
    sign, digits = m.groups()
    if digits[:2] in ("0x", "0X"):
        value = int(digits[2:], 16)
    elif digits[:2] in ("0o", "0O"):
        value = int(digits[2:], 8)
    elif digits[:2] in ("0b", "0B"):
        value = int(digits[2:], 2)
    elif len(digits) > 1 and digits[0] == "0":
        value = int(digits[1:], 8)
    else:
        value = int(digits)
    value = -value if sign == "-" else value
    if -(2**63) <= value < 2**64 and (value >= 0 or sign == "-"):
        return value
    return None


def go_yaml_v2_plain(text):
    """The value go-yaml v2 gives a plain scalar decoded into interface{}."""
    hint = text[:1]
    if text in GO_RESOLVE_MAP:
        return GO_RESOLVE_MAP[text]
    if hint == ".":
        if GO_FLOAT.fullmatch(text):
            return float(text)
    elif hint in "+-0123456789" and hint:
        if GO_TIMESTAMP_START.match(text):
            return text  # a timestamp, or nothing else: a string either way
        plain = text.replace("_", "")
        value = go_parse_int(plain)
        if value is not None:
            return value
        if GO_YAML_FLOAT.fullmatch(plain):
            return float(plain)
        if plain.startswith("0b") or plain.startswith("-0b"):
            try:
                return int(plain.replace("0b", "", 1), 2)
            except ValueError:
                pass
    return text


def same_reading(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def check_node(loader, node, problems, seen):
    """Where PyYAML's reading of `node` differs from go-yaml v2's: appended to `problems`."""
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, yaml.ScalarNode):
        if getattr(node, "plain_implicit", False):
            go = go_yaml_v2_plain(node.value)
            if go == "<<merge>>":
                return
            py = loader.construct_object(node, deep=True)
            if not same_reading(go, py):
                problems.append(
                    f"line {node.start_mark.line + 1}: the plain scalar {node.value!r} is "
                    f"{go!r} for go-yaml v2 but {py!r} for PyYAML"
                )
        return
    if isinstance(node, yaml.SequenceNode):
        for item in node.value:
            check_node(loader, item, problems, seen)
        return
    if isinstance(node, yaml.MappingNode):
        written = set()
        for key, value in node.value:
            check_node(loader, key, problems, seen)
            check_node(loader, value, problems, seen)
            if key.tag == "tag:yaml.org,2002:merge":
                merged = value.value if isinstance(value, yaml.SequenceNode) else [value]
                for source in merged:
                    if not isinstance(source, yaml.MappingNode):
                        continue
                    for merged_key, _ in source.value:
                        if isinstance(merged_key, yaml.ScalarNode) and merged_key.value in written:
                            problems.append(
                                f"line {key.start_mark.line + 1}: the merge key overrides "
                                f"{merged_key.value!r} written before it for go-yaml v2, "
                                "not for PyYAML"
                            )
            elif isinstance(key, yaml.ScalarNode):
                written.add(key.value)


def to_json(value, where):
    """The value as kubectl sends it: JSON, with the keys made strings as sigs.k8s.io/yaml does."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        if not -(2**63) <= value < 2**64:
            raise SkipFile(f"{where}: the integer {value} does not fit 64 bits")
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise SkipFile(f"{where}: {value} cannot be sent as JSON")
        if value.is_integer() and abs(value) < 2**63:
            return int(value)
        return value
    if isinstance(value, list):
        return [to_json(v, where) for v in value]
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if isinstance(key, bool):
                key = "true" if key else "false"
            elif isinstance(key, int):
                key = str(key)
            elif not isinstance(key, str):
                raise SkipFile(f"{where}: a mapping key of type {type(key).__name__}")
            out[key] = to_json(item, where)
        return out
    if isinstance(value, (datetime.date, datetime.datetime)):
        return str(value)
    raise SkipFile(f"{where}: a value of type {type(value).__name__}")


def go_trim_space(text):
    return text.strip(GO_WHITE_SPACE)


def split_documents(text):
    """(first line, text) of each document, cut as kubectl's YAML reader cuts them."""
    documents = []
    current = []
    start = 1
    for number, line in enumerate(text.split("\n"), start=1):
        if line.startswith("---"):
            rest = go_trim_space(line[3:])
            if rest == "" or rest.startswith("#"):
                documents.append((start, "\n".join(current)))
                current = []
                start = number + 1
                continue
        current.append(line)
    documents.append((start, "\n".join(current)))
    return documents


def objects_of(value, node, first_line, out):
    """The objects of a document: itself, or the items of a list (nested lists too)."""
    if not isinstance(value, dict) or not isinstance(value.get("kind"), str):
        return
    kind = value["kind"]
    items = value.get("items")
    if (kind == "List" or kind.endswith("List")) and isinstance(items, list):
        item_nodes = []
        if isinstance(node, yaml.MappingNode):
            for key, child in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value == "items":
                    if isinstance(child, yaml.SequenceNode):
                        item_nodes = child.value
        for index, item in enumerate(items):
            item_node = item_nodes[index] if index < len(item_nodes) else None
            objects_of(item, item_node, first_line, out)
        return
    span = None
    if node is not None:
        span = (
            first_line + node.start_mark.line,
            node.start_mark.column + 1,
            first_line + node.end_mark.line,
            node.end_mark.column + 1,
        )
    out.append((value, span))


def read_objects(path, display):
    """[(object, span)] of a YAML or JSON file; SkipFile when PyYAML would read it otherwise."""
    data = open(path, "rb").read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SkipFile(f"{display}: not UTF-8 ({error})") from error
    text = text.removeprefix("\ufeff")
    out = []
    if path.endswith(".json"):
        try:
            value = json.loads(text)
        except ValueError as error:
            raise SkipFile(f"{display}: the JSON does not parse for Python ({error})") from error
        # The spans come from the same text read as YAML, when it reads.
        node = None
        try:
            node = yaml.compose(text, Loader=KubeLoader)
        except yaml.YAMLError:
            pass
        objects_of(to_json(value, display), node, 1, out)
        return out
    for first_line, document in split_documents(text):
        if all(
            line.strip() in ("", "...") or line.lstrip().startswith("#")
            for line in document.split("\n")
        ):
            # Nothing but comments and end markers: an empty document, which kubectl drops
            # (PyYAML refuses a stream that starts with `...`).
            continue
        loader = KubeLoader(document)
        try:
            while loader.check_node():
                node = loader.get_node()
                problems = []
                check_node(loader, node, problems, set())
                if problems:
                    lines = [
                        re.sub(r"^line (\d+)", lambda m: f"line {int(m[1]) + first_line - 1}", p)
                        for p in problems
                    ]
                    raise SkipFile(f"{display}: " + "; ".join(lines))
                loader.constructed_objects = {}
                value = loader.construct_document(node)
                objects_of(to_json(value, display), node, first_line, out)
        except yaml.YAMLError as error:
            said = str(error).replace("\n", " ")
            raise SkipFile(f"{display}: PyYAML cannot read it ({said})") from error
        finally:
            loader.dispose()
    return out


# ---------------------------------------------------------------------------------------------
# The objects, their admission targets and what credlint check says about them.


def reference(obj):
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    name = metadata.get("name") if isinstance(metadata.get("name"), str) else ""
    namespace = metadata.get("namespace")
    namespace = namespace if isinstance(namespace, str) and namespace else None
    return obj["kind"], namespace, name


def as_stored(value):
    """The object as the API server stores it: a field whose value is null is absent (decoded
    into a typed object as unset, pruned from a custom resource), which is what admission sees."""
    if isinstance(value, dict):
        return {k: as_stored(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [as_stored(v) for v in value]
    return value


def target_of(obj, old=None):
    """The admission request for `obj`: a CREATE, or an UPDATE from `old` when it is given."""
    operation = "CREATE" if old is None else "UPDATE"
    api_version = obj.get("apiVersion") if isinstance(obj.get("apiVersion"), str) else ""
    group, _, version = api_version.rpartition("/")
    kind, namespace, name = reference(obj)
    resource, namespaced = resource_of(group, kind, namespace is not None)
    return {
        "group": group,
        "version": version,
        "resource": resource,
        "namespaced": namespaced,
        "namespace": namespace or "",
        # The CEL values, made once for all the policies (evaluation does not change them).
        "operation": operation,
        "object": celpy.json_to_cel(as_stored(obj)),
        "old": None if old is None else celpy.json_to_cel(as_stored(old)),
        "request": celpy.json_to_cel({
            "operation": operation,
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": resource},
            "name": name,
            "namespace": namespace or "",
            "dryRun": False,
            "userInfo": {"username": "credlint-independent-check"},
        }),
    }


CLEANUP_FINALIZER = "external-secrets.io/externalsecret-cleanup"


def with_metadata(obj, key, value):
    """A copy of `obj` whose metadata holds `value` at `key` (what an older version carried)."""
    copy = dict(obj)
    metadata = dict(obj["metadata"]) if isinstance(obj.get("metadata"), dict) else {}
    metadata[key] = value
    copy["metadata"] = metadata
    return copy


def describe(obj, span):
    kind, namespace, name = reference(obj)
    where = f" (line {span[0]})" if span else ""
    return f"{kind} {namespace + '/' if namespace else ''}{name or '<no name>'}{where}"


def check_file(credlint, root, display, image):
    args = [credlint, "check", "--format", "json", "--no-config"]
    if image:
        args += ["--credentials-image", image]
    out = subprocess.run(args + [display], cwd=root, capture_output=True, text=True)
    # A file with no object in it (a folder's options.yaml) is no manifest: nothing to lint.
    if out.returncode == 2 and "nothing to lint" in out.stderr:
        return {"findings": [], "summary": {"objects": 0}}
    if out.returncode not in (0, 1):
        said = out.stderr.strip()
        raise Unsupported(f"credlint check {display} exited {out.returncode}: {said}")
    return json.loads(out.stdout)


def attribute(findings, objects, display, rules_of_interest):
    """The rules reported on each object (by index), and findings no object could take."""
    reported = [dict() for _ in objects]
    lost = []
    for finding in findings:
        ref = finding.get("object")
        if ref is None:
            continue
        key = (ref.get("kind"), ref.get("namespace"), ref.get("name") or "")
        candidates = [i for i, (obj, _) in enumerate(objects) if reference(obj) == key]
        if len(candidates) > 1:
            # Several objects of one name in the file: the one whose text holds the finding.
            at = (finding["line"], finding["column"])
            candidates = [
                i
                for i in candidates
                if objects[i][1] is not None
                and objects[i][1][:2] <= at <= objects[i][1][2:]
            ]
        if len(candidates) == 1:
            reported[candidates[0]].setdefault(finding["rule"], finding)
        elif finding["rule"] in rules_of_interest:
            lost.append(
                f"{display}:{finding['line']}: credlint check reports {finding['rule']} on "
                f"{key[0]} {key[1] or ''}/{key[2]}, which matches {len(candidates)} of the "
                "objects read here"
            )
    return reported, lost


def credentials_image(root, path):
    """The --credentials-image of a fixture folder: `credentialsImage` in its options.yaml."""
    fixtures = os.path.join(root, "fixtures")
    folder = os.path.dirname(path)
    while folder.startswith(fixtures):
        options = os.path.join(folder, "options.yaml")
        if os.path.isfile(options):
            with open(options, encoding="utf-8") as handle:
                value = (yaml.safe_load(handle) or {}).get("credentialsImage") or ""
            return str(value)
        if folder == fixtures:
            break
        folder = os.path.dirname(folder)
    return ""


def fixture_files(root):
    found = []
    for folder, dirs, files in os.walk(os.path.join(root, "fixtures")):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in files:
            if name.endswith((".yaml", ".yml", ".json")):
                found.append(os.path.join(folder, name))
    return sorted(found)


def main(argv):
    verbose = "--verbose" in argv
    args = [a for a in argv[1:] if a != "--verbose"]
    if len(args) != 2:
        print(__doc__.strip().split("\n\n")[2], file=sys.stderr)
        return 2
    credlint, root = os.path.abspath(args[0]), os.path.abspath(args[1])
    policy_sets = {}
    figures = dict(
        files=0, objects=0, refused=0, verdicts=0, selected=0, denials=0, updates=0,
        denied_updates=0,
    )
    denied_by = {}
    selected_by = {}
    skipped = []
    disagreements = []
    try:
        for path in fixture_files(root):
            display = os.path.relpath(path, root)
            image = credentials_image(root, path)
            if image not in policy_sets:
                policy_sets[image] = load_policies(credlint, root, image)
            policies = policy_sets[image]
            names = {p.name for p in policies}
            report = check_file(credlint, root, display, image)
            findings = report["findings"]
            refused = sorted({f["rule"] for f in findings} & FILE_REFUSED)
            if refused:
                skipped.append(f"{display}: credlint reports {', '.join(refused)}")
                continue
            try:
                objects = read_objects(path, display)
            except SkipFile as why:
                skipped.append(str(why))
                continue
            figures["files"] += 1
            if report["summary"]["objects"] != len(objects):
                disagreements.append(
                    f"{display}: credlint check reads {report['summary']['objects']} objects, "
                    f"this script {len(objects)}"
                )
            reported, lost = attribute(findings, objects, display, names | {OBJECT_REFUSED})
            disagreements += lost
            for (obj, span), rules in zip(objects, reported):
                if OBJECT_REFUSED in rules:
                    figures["refused"] += 1
                    continue
                figures["objects"] += 1
                target = target_of(obj)
                # Two UPDATEs of the same object: from a version that still carried a
                # controller's finalizer (metadata only: always admitted), and from a version
                # with other labels (content: judged as the CREATE is).
                freed = target_of(obj, with_metadata(obj, "finalizers", [CLEANUP_FINALIZER]))
                relabelled = target_of(obj, with_metadata(obj, "labels", {"credlint.io/before": "1"}))
                for policy in policies:
                    figures["verdicts"] += 1
                    verdict, reasons = policy.decide(target)
                    # Every object this policy denies at CREATE, updated: from a version that
                    # still had a controller's finalizer (metadata only: admitted, so the
                    # controller is never stuck), and from a version with other labels (content:
                    # denied, as the CREATE is). tests/agreement.rs does this for every object
                    # with credlint's evaluator; here, the cases that decide, to keep it quick.
                    if verdict == "denied":
                        figures["updates"] += 2
                        freed_verdict, freed_reasons = policy.decide(freed)
                        if freed_verdict == "denied":
                            disagreements.append(
                                f"{display}: {describe(obj, span)}: policy {policy.name} denies "
                                f"the removal of a finalizer ({'; '.join(freed_reasons)})"
                            )
                        updated, _ = policy.decide(relabelled)
                        figures["denied_updates"] += updated == "denied"
                        if updated != "denied":
                            disagreements.append(
                                f"{display}: {describe(obj, span)}: policy {policy.name} {updated} "
                                "an UPDATE of the labels of an object it denies at CREATE"
                            )
                    if verdict != "not-selected":
                        figures["selected"] += 1
                        selected_by[policy.name] = selected_by.get(policy.name, 0) + 1
                    denies = verdict == "denied"
                    if denies:
                        figures["denials"] += 1
                        denied_by[policy.name] = denied_by.get(policy.name, 0) + 1
                    finding = rules.get(policy.name)
                    # A member only the linter recognises, by the references between objects
                    # (the README's stated gap): no policy may select it, so none denies it.
                    if finding is not None and verdict == "not-selected":
                        figures["unselected_members"] = figures.get("unselected_members", 0) + 1
                        continue
                    if denies != (finding is not None):
                        said = (
                            f"reports it ({finding['message']})"
                            if finding
                            else "does not report it"
                        )
                        why = "; ".join(reasons) if reasons else verdict
                        disagreements.append(
                            f"{display}: {describe(obj, span)}: policy {policy.name} "
                            f"{'denies' if denies else 'admits'} ({why}), credlint check {said}"
                        )
    except Unsupported as problem:
        print(f"independent CEL: cannot check: {problem}", file=sys.stderr)
        return 2
    count = len(next(iter(policy_sets.values()), []))
    for policy in next(iter(policy_sets.values()), []):
        if not denied_by.get(policy.name):
            disagreements.append(
                f"policy {policy.name} denies no fixture object: the check says nothing of it"
            )
    if figures["objects"] == 0:
        disagreements.append("no fixture object was evaluated")
    if figures["denied_updates"] == 0:
        disagreements.append("no UPDATE was denied: the UPDATE check says nothing")
    print(
        f"independent CEL: {count} policies, {figures['objects']} objects, "
        f"{figures['verdicts']} verdicts, {figures['denials']} denials, "
        f"{len(disagreements)} disagreements"
    )
    print(
        f"  cel-python {celpy_version()}; custom functions: "
        f"{', '.join(sorted(FUNCTIONS)) or 'none'}; {figures['files']} files read, "
        f"{len(skipped)} left out; {figures['refused']} objects the API server refuses "
        f"(schema) left out; {figures['selected']} verdicts selected the object; "
        f"{figures.get('unselected_members', 0)} findings on members no policy selects; "
        f"{figures['updates']} UPDATE verdicts ({figures['denied_updates']} denied)"
    )
    for line in skipped:
        print(f"  left out: {line}")
    if verbose:
        for policy in next(iter(policy_sets.values()), []):
            print(
                f"  {policy.name}: selected {selected_by.get(policy.name, 0)}, "
                f"denied {denied_by.get(policy.name, 0)}"
            )
    for line in disagreements:
        print(f"DISAGREEMENT {line}")
    return 1 if disagreements else 0


def celpy_version():
    try:
        from importlib.metadata import version

        return version("cel-python")
    except Exception:
        return "(version unknown)"


if __name__ == "__main__":
    sys.exit(main(sys.argv))
