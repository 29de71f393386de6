//! A small binary format for what linting one file produced: LEB128 integers, strings as a
//! length and UTF-8 bytes, options and variants as one tag byte. Decoding checks every length
//! against the bytes left and every tag against the known ones, so a damaged entry is refused
//! (`None`), never trusted or panicked on.

use crate::common::sha256::Sha256State;
use crate::load::source::{At, Loc};
use crate::load::yaml::Span;
use crate::model::bundle::{
    ConfigMapFacts, ContainerEnv, EnvEntry, EnvFromEntry, EnvSource, Facts, JobFacts, Member,
    MemberKind, Mount, ObjectKey, Owner, Plan, RoleRule, Volume,
};
use crate::model::outcome::{FileOut, IgnoreAnnotation, Outcome, RunOut, Summary};
use crate::model::writers::{self, Controller, Expression, Selector, Subject, WriterKind};
use crate::model::{Finding, Label, ObjectRef, Severity, Suppression};

/// Encodes `out`, whose places all lie in file `file`; `None` when one does not (such a result
/// cannot be moved to another run's file numbering, so it is not kept).
pub fn encode(out: &FileOut, file: usize) -> Option<Vec<u8>> {
    let mut w = Writer {
        bytes: Vec::with_capacity(1024),
        file: Some(file),
        foreign: false,
    };
    w.usize(out.documents);
    w.usize(out.objects);
    w.seq(&out.findings, Writer::finding);
    w.seq(&out.members, Writer::member);
    w.seq(&out.ignores, Writer::ignore);
    w.seq(&out.writers, Writer::render_writer);
    (!w.foreign).then_some(w.bytes)
}

/// Decodes an encoded result, placing it in file `file`.
pub fn decode(bytes: &[u8], file: usize) -> Option<FileOut> {
    let mut r = Reader {
        bytes,
        at: 0,
        file: Some(file),
        files: file + 1,
    };
    let documents = r.usize()?;
    let objects = r.usize()?;
    let findings = r.seq(Reader::finding)?;
    let members = r.seq(Reader::member)?;
    let ignores = r.seq(Reader::ignore)?;
    let render_writers = r.seq(Reader::render_writer)?;
    // Trailing bytes mean a writer this reader does not know.
    (r.at == bytes.len()).then(|| FileOut {
        writers: render_writers,
        findings,
        members,
        ignores,
        documents,
        objects,
        timings: Default::default(),
    })
}

/// Encodes what a whole run keeps ([`RunOut`]): its places keep their own file numbers.
pub fn encode_run(out: &Outcome) -> Vec<u8> {
    let mut w = Writer {
        bytes: Vec::with_capacity(1024),
        file: None,
        foreign: false,
    };
    let Summary {
        files,
        documents,
        objects,
        bundles,
        errors,
        warnings,
        ..
    } = out.summary;
    for n in [files, documents, objects, bundles, errors, warnings] {
        w.usize(n);
    }
    w.seq(&out.findings, Writer::finding);
    w.seq(&out.ignores, Writer::ignore);
    w.seq(&out.bundle_files, |w, (id, files)| {
        w.str(id);
        w.seq(files, |w, f| w.usize(*f));
    });
    w.bytes
}

/// Decodes what [`encode_run`] wrote for a run of `files` files; a place in a file beyond them
/// is damage.
pub fn decode_run(bytes: &[u8], files: usize) -> Option<RunOut> {
    let mut r = Reader {
        bytes,
        at: 0,
        file: None,
        files,
    };
    let mut counts = [0; 6];
    for n in &mut counts {
        *n = r.usize()?;
    }
    let [files_counted, documents, objects, bundles, errors, warnings] = counts;
    let findings = r.seq(Reader::finding)?;
    let ignores = r.seq(Reader::ignore)?;
    let bundle_files = r.seq(|r| Some((r.string()?, r.seq(Reader::file)?)))?;
    (r.at == bytes.len() && files_counted == files).then(|| RunOut {
        findings,
        summary: Summary {
            files,
            documents,
            objects,
            bundles,
            errors,
            warnings,
            ..Summary::default()
        },
        ignores,
        bundle_files,
    })
}

struct Writer {
    bytes: Vec<u8>,
    /// The file every place lies in (a file's result), or `None`: each place names its own (a
    /// run's).
    file: Option<usize>,
    /// A place in another file was met.
    foreign: bool,
}

impl Writer {
    fn u64(&mut self, mut v: u64) {
        loop {
            let low = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.bytes.push(low);
                return;
            }
            self.bytes.push(low | 0x80);
        }
    }

    fn usize(&mut self, v: usize) {
        self.u64(v as u64);
    }

    fn u8(&mut self, v: u8) {
        self.bytes.push(v);
    }

    fn bytes(&mut self, b: &[u8]) {
        self.usize(b.len());
        self.bytes.extend_from_slice(b);
    }

    fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }

    fn opt<T>(&mut self, v: &Option<T>, f: impl FnOnce(&mut Self, &T)) {
        match v {
            None => self.u8(0),
            Some(v) => {
                self.u8(1);
                f(self, v);
            }
        }
    }

    fn seq<T>(&mut self, items: &[T], mut f: impl FnMut(&mut Self, &T)) {
        self.usize(items.len());
        for item in items {
            f(self, item);
        }
    }

    fn strs(&mut self, items: &[String]) {
        self.seq(items, |w, s| w.str(s));
    }

    fn span(&mut self, span: Span) {
        self.u64(span.start.into());
        self.u64(span.end.into());
    }

    fn loc(&mut self, loc: &Loc) {
        let Loc {
            file,
            line,
            column,
            end_line,
            end_column,
            span,
        } = loc;
        match self.file {
            Some(only) => self.foreign |= *file != only,
            None => self.usize(*file),
        }
        self.usize(*line);
        self.usize(*column);
        self.usize(*end_line);
        self.usize(*end_column);
        self.span(*span);
    }

    fn at(&mut self, at: &At) {
        self.loc(&Loc::from(at));
    }

    fn ignore(&mut self, i: &IgnoreAnnotation) {
        self.object(&i.object);
        self.str(&i.value);
        self.loc(&i.loc);
    }

    fn object(&mut self, o: &ObjectRef) {
        let ObjectRef {
            kind,
            namespace,
            name,
        } = o;
        self.str(kind);
        self.opt(namespace, |w, n| w.str(n));
        self.str(name);
    }

    fn finding(&mut self, f: &Finding) {
        let Finding {
            rule,
            severity,
            message,
            loc,
            labels,
            object,
            bundle,
            suppressed,
        } = f;
        self.str(rule);
        self.u8(match severity {
            Severity::Warning => 0,
            Severity::Error => 1,
        });
        self.str(message);
        self.loc(loc);
        self.seq(labels, |w, Label { loc, message }| {
            w.loc(loc);
            w.str(message);
        });
        self.opt(object, Writer::object);
        self.opt(bundle, |w, b| w.str(b));
        self.opt(
            suppressed,
            |w,
             Suppression {
                 reason,
                 loc,
                 per_path,
             }| {
                w.str(reason);
                w.loc(loc);
                w.u8(u8::from(*per_path));
            },
        );
    }

    fn member(&mut self, m: &Member) {
        let Member {
            kind,
            namespace,
            owner,
            name,
            loc,
            facts,
            held,
        } = m;
        self.u8(kind_tag(*kind));
        self.opt(namespace, |w, n| w.str(n));
        match owner {
            Owner::Known(o) => {
                self.u8(0);
                self.str(o);
            }
            Owner::Prefix(p) => {
                self.u8(1);
                self.str(p);
            }
            Owner::Linked => self.u8(2),
        }
        self.str(name);
        self.at(loc);
        match facts {
            Facts::ServiceAccount(automount) => {
                self.u8(0);
                self.automount(automount);
            }
            Facts::Role(rules) => {
                self.u8(1);
                self.seq(rules, Writer::role_rule);
            }
            Facts::RoleBinding(b) => {
                self.u8(2);
                self.opt(&b.role, |w, r| w.str(r));
                self.seq(&b.accounts, |w, (name, namespace)| {
                    w.str(name);
                    w.opt(namespace, |w, n| w.str(n));
                });
                self.usize(b.subjects);
            }
            Facts::ConfigMap(cm) => {
                self.u8(3);
                self.config_map(cm);
            }
            Facts::Job(job) => {
                self.u8(4);
                self.job(job);
            }
        }
        self.opt(held, |w, findings| w.seq(findings, Writer::finding));
    }

    fn automount(&mut self, automount: &crate::model::bundle::Automount) {
        self.opt(automount, |w, (on, at)| {
            w.u8(u8::from(*on));
            w.at(at);
        });
    }

    fn render_writer(&mut self, x: &writers::Writer) {
        let writers::Writer {
            kind,
            object,
            namespace,
            name,
            loc,
            generated,
            subjects,
            selector,
            labels,
            target,
            role,
        } = x;
        match kind {
            WriterKind::Secret => self.u8(0),
            WriterKind::ExternalSecret => self.u8(1),
            WriterKind::Password { cluster } => {
                self.u8(2);
                self.u8(u8::from(*cluster));
            }
            WriterKind::RoleBinding => self.u8(3),
            WriterKind::ClusterRoleBinding => self.u8(4),
            WriterKind::Controller(c) => {
                self.u8(5);
                self.u8(match c {
                    Controller::ClusterExternalSecret => 0,
                    Controller::KyvernoGenerate => 1,
                    Controller::SealedSecret => 2,
                    Controller::KyvernoCloneList => 3,
                });
            }
            WriterKind::Namespace => self.u8(6),
            WriterKind::Workload => self.u8(7),
            WriterKind::Token => self.u8(8),
        }
        self.object(object);
        self.opt(namespace, |w, n| w.str(n));
        self.str(name);
        self.at(loc);
        self.u8(u8::from(*generated));
        self.seq(
            subjects,
            |w,
             Subject {
                 kind,
                 name,
                 namespace,
                 loc,
             }| {
                w.str(kind);
                w.str(name);
                w.opt(namespace, |w, n| w.str(n));
                w.at(loc);
            },
        );
        let pairs = |w: &mut Self, pairs: &[(String, String)]| {
            w.seq(pairs, |w, (k, v)| {
                w.str(k);
                w.str(v);
            })
        };
        self.opt(selector, |w, s| {
            pairs(w, &s.labels);
            w.seq(&s.expressions, |w, e| {
                w.str(&e.key);
                w.str(&e.operator);
                w.seq(&e.values, |w, v| w.str(v));
            });
        });
        pairs(self, labels);
        self.opt(target, |w, t| w.at(t));
        self.opt(role, |w, r| w.str(r));
    }

    fn role_rule(&mut self, r: &RoleRule) {
        let RoleRule {
            groups,
            resources,
            verbs,
            names,
            name_locs,
            loc,
            names_loc,
            verbs_loc,
        } = r;
        self.strs(groups);
        self.strs(resources);
        self.strs(verbs);
        self.opt(names, |w, n| w.strs(n));
        self.seq(name_locs, Writer::at);
        self.at(loc);
        self.opt(names_loc, Writer::at);
        self.opt(verbs_loc, Writer::at);
    }

    fn config_map(&mut self, cm: &ConfigMapFacts) {
        let ConfigMapFacts {
            plan,
            hash_state,
            plan_text,
            script,
            script_loc,
            other_data,
        } = cm;
        self.opt(
            plan,
            |w,
             Plan {
                 kind,
                 secrets,
                 generators,
                 pods,
                 secret_locs,
                 generator_locs,
             }| {
                w.str(kind);
                w.strs(secrets);
                w.strs(generators);
                w.strs(pods);
                w.seq(secret_locs, Writer::at);
                w.seq(generator_locs, Writer::at);
            },
        );
        self.opt(
            hash_state,
            |w,
             Sha256State {
                 chain,
                 pending,
                 length,
             }| {
                for word in chain {
                    w.u64((*word).into());
                }
                w.bytes(pending);
                w.u64(*length);
            },
        );
        self.opt(plan_text, |w, t| w.str(t));
        self.opt(script, |w, t| w.str(t));
        self.opt(script_loc, Writer::at);
        self.seq(other_data, |w, (k, v)| {
            w.str(k);
            w.str(v);
        });
    }

    fn job(&mut self, j: &JobFacts) {
        let JobFacts {
            name,
            pod_loc,
            service_account,
            volumes,
            container_loc,
            mounts,
            command,
            command_loc,
            image,
            automount,
            fs_group,
            run_as_user,
            run_as_group,
            env,
        } = j;
        self.str(name);
        self.at(pod_loc);
        self.opt(service_account, |w, (s, at)| {
            w.str(s);
            w.at(at);
        });
        self.seq(
            volumes,
            |w,
             Volume {
                 name,
                 config_map,
                 loc,
                 items,
                 optional,
                 default_mode,
             }| {
                w.str(name);
                w.opt(config_map, |w, c| w.str(c));
                w.at(loc);
                w.opt(items, |w, (items, at)| {
                    w.seq(items, |w, (key, mode, at)| {
                        w.str(key);
                        w.opt(mode, |w, m| w.u64(*m as u64));
                        w.at(at);
                    });
                    w.at(at);
                });
                w.opt(optional, Writer::at);
                w.opt(default_mode, |w, (m, at)| {
                    w.u64(*m as u64);
                    w.at(at);
                });
            },
        );
        self.opt(container_loc, Writer::at);
        self.seq(
            mounts,
            |w,
             Mount {
                 volume,
                 path,
                 loc,
                 sub_path,
             }| {
                w.str(volume);
                w.str(path);
                w.at(loc);
                w.opt(sub_path, |w, (p, at)| {
                    w.str(p);
                    w.at(at);
                });
            },
        );
        self.strs(command);
        self.opt(command_loc, Writer::at);
        self.opt(image, |w, (s, at)| {
            w.str(s);
            w.at(at);
        });
        self.automount(automount);
        self.u8(u8::from(*fs_group));
        for id in [run_as_user, run_as_group] {
            self.opt(id, |w, v| w.u64(*v as u64));
        }
        self.container_env(env);
    }

    fn container_env(&mut self, e: &ContainerEnv) {
        let ContainerEnv {
            env,
            env_from,
            resources,
            labels,
            annotations,
        } = e;
        self.seq(env, |w, EnvEntry { name, source }| {
            w.str(name);
            match source {
                EnvSource::Value(v) => {
                    w.u8(0);
                    w.str(v);
                }
                EnvSource::Field(f) => {
                    w.u8(1);
                    w.str(f);
                }
                EnvSource::Resource { resource, divisor } => {
                    w.u8(2);
                    w.str(resource);
                    w.opt(divisor, |w, d| w.str(d));
                }
                EnvSource::Key(key) => {
                    w.u8(3);
                    w.object_key(key);
                }
                EnvSource::Invalid(why) => {
                    w.u8(4);
                    w.str(why);
                }
            }
        });
        self.seq(
            env_from,
            |w,
             EnvFromEntry {
                 secret,
                 name,
                 prefix,
                 optional,
             }| {
                w.u8(u8::from(*secret));
                w.str(name);
                w.str(prefix);
                w.u8(u8::from(*optional));
            },
        );
        for pairs in [resources, labels, annotations] {
            self.seq(pairs, |w, (k, v)| {
                w.str(k);
                w.str(v);
            });
        }
    }

    fn object_key(&mut self, k: &ObjectKey) {
        let ObjectKey {
            secret,
            name,
            key,
            optional,
        } = k;
        self.u8(u8::from(*secret));
        self.str(name);
        self.str(key);
        self.u8(u8::from(*optional));
    }
}

fn kind_tag(kind: MemberKind) -> u8 {
    match kind {
        MemberKind::ServiceAccount => 0,
        MemberKind::Role => 1,
        MemberKind::RoleBinding => 2,
        MemberKind::ConfigMap => 3,
        MemberKind::Job => 4,
    }
}

struct Reader<'b> {
    bytes: &'b [u8],
    at: usize,
    /// As [`Writer::file`].
    file: Option<usize>,
    /// How many files the run has: a place must lie in one of them.
    files: usize,
}

impl<'b> Reader<'b> {
    fn u8(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn u64(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f).checked_shl(shift)?;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    fn usize(&mut self) -> Option<usize> {
        usize::try_from(self.u64()?).ok()
    }

    fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.u64()?).ok()
    }

    fn bytes(&mut self) -> Option<&'b [u8]> {
        let len = self.usize()?;
        let end = self
            .at
            .checked_add(len)
            .filter(|&e| e <= self.bytes.len())?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Some(out)
    }

    fn string(&mut self) -> Option<String> {
        std::str::from_utf8(self.bytes()?).ok().map(str::to_string)
    }

    fn flag(&mut self) -> Option<bool> {
        match self.u8()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }

    fn opt<T>(&mut self, f: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        Some(if self.flag()? { Some(f(self)?) } else { None })
    }

    fn seq<T>(&mut self, mut f: impl FnMut(&mut Self) -> Option<T>) -> Option<Vec<T>> {
        let len = self.usize()?;
        // Every item takes a byte at least: a larger count is damage, not a reason to reserve.
        if len > self.bytes.len() - self.at {
            return None;
        }
        let mut out = Vec::with_capacity(len);
        for _ in 0..len {
            out.push(f(self)?);
        }
        Some(out)
    }

    fn strings(&mut self) -> Option<Vec<String>> {
        self.seq(Reader::string)
    }

    fn span(&mut self) -> Option<Span> {
        let start = self.u32()?;
        let end = self.u32()?;
        (start <= end).then_some(Span { start, end })
    }

    fn file(&mut self) -> Option<usize> {
        self.usize().filter(|&f| f < self.files)
    }

    fn ignore(&mut self) -> Option<IgnoreAnnotation> {
        Some(IgnoreAnnotation {
            object: self.object()?,
            value: self.string()?,
            loc: self.loc()?,
        })
    }

    fn loc(&mut self) -> Option<Loc> {
        Some(Loc {
            file: match self.file {
                Some(only) => only,
                None => self.file()?,
            },
            line: self.usize()?,
            column: self.usize()?,
            end_line: self.usize()?,
            end_column: self.usize()?,
            span: self.span()?,
        })
    }

    fn at(&mut self) -> Option<At> {
        let loc = self.loc()?;
        At::try_from(&loc).ok()
    }

    fn object(&mut self) -> Option<ObjectRef> {
        Some(ObjectRef {
            kind: self.string()?,
            namespace: self.opt(Reader::string)?,
            name: self.string()?,
        })
    }

    fn finding(&mut self) -> Option<Finding> {
        Some(Finding {
            rule: self.string()?,
            severity: match self.u8()? {
                0 => Severity::Warning,
                1 => Severity::Error,
                _ => return None,
            },
            message: self.string()?,
            loc: self.loc()?,
            labels: self.seq(|r| {
                Some(Label {
                    loc: r.loc()?,
                    message: r.string()?,
                })
            })?,
            object: self.opt(Reader::object)?,
            bundle: self.opt(Reader::string)?,
            suppressed: self.opt(|r| {
                Some(Suppression {
                    reason: r.string()?,
                    loc: r.loc()?,
                    per_path: r.flag()?,
                })
            })?,
        })
    }

    fn member(&mut self) -> Option<Member> {
        let kind = match self.u8()? {
            0 => MemberKind::ServiceAccount,
            1 => MemberKind::Role,
            2 => MemberKind::RoleBinding,
            3 => MemberKind::ConfigMap,
            4 => MemberKind::Job,
            _ => return None,
        };
        let namespace = self.opt(Reader::string)?;
        let owner = match self.u8()? {
            0 => Owner::Known(self.string()?),
            1 => Owner::Prefix(self.string()?),
            2 => Owner::Linked,
            _ => return None,
        };
        let name = self.string()?;
        let loc = self.at()?;
        let facts = match self.u8()? {
            0 => Facts::ServiceAccount(self.automount()?),
            1 => Facts::Role(self.seq(Reader::role_rule)?),
            2 => Facts::RoleBinding(crate::model::bundle::BindingFacts {
                role: self.opt(Reader::string)?,
                accounts: self.seq(|r| Some((r.string()?, r.opt(Reader::string)?)))?,
                subjects: self.usize()?,
            }),
            3 => Facts::ConfigMap(Box::new(self.config_map()?)),
            4 => Facts::Job(Box::new(self.job()?)),
            _ => return None,
        };
        let held = self.opt(|r| r.seq(Reader::finding))?;
        Some(Member {
            kind,
            namespace,
            owner,
            name,
            loc,
            facts,
            held,
        })
    }

    fn automount(&mut self) -> Option<crate::model::bundle::Automount> {
        self.opt(|r| Some((r.flag()?, r.at()?)))
    }

    fn render_writer(&mut self) -> Option<writers::Writer> {
        let kind = match self.u8()? {
            0 => WriterKind::Secret,
            1 => WriterKind::ExternalSecret,
            2 => WriterKind::Password {
                cluster: self.flag()?,
            },
            3 => WriterKind::RoleBinding,
            4 => WriterKind::ClusterRoleBinding,
            5 => WriterKind::Controller(match self.u8()? {
                0 => Controller::ClusterExternalSecret,
                1 => Controller::KyvernoGenerate,
                2 => Controller::SealedSecret,
                3 => Controller::KyvernoCloneList,
                _ => return None,
            }),
            6 => WriterKind::Namespace,
            7 => WriterKind::Workload,
            8 => WriterKind::Token,
            _ => return None,
        };
        let pairs = |r: &mut Self| r.seq(|r| Some((r.string()?, r.string()?)));
        Some(writers::Writer {
            kind,
            object: self.object()?,
            namespace: self.opt(Reader::string)?,
            name: self.string()?,
            loc: self.at()?,
            generated: self.flag()?,
            subjects: self.seq(|r| {
                Some(Subject {
                    kind: r.string()?,
                    name: r.string()?,
                    namespace: r.opt(Reader::string)?,
                    loc: r.at()?,
                })
            })?,
            selector: self.opt(|r| {
                Some(Selector {
                    labels: pairs(r)?,
                    expressions: r.seq(|r| {
                        Some(Expression {
                            key: r.string()?,
                            operator: r.string()?,
                            values: r.strings()?,
                        })
                    })?,
                })
            })?,
            labels: pairs(self)?,
            target: self.opt(Reader::at)?,
            role: self.opt(Reader::string)?,
        })
    }

    fn role_rule(&mut self) -> Option<RoleRule> {
        Some(RoleRule {
            groups: self.strings()?,
            resources: self.strings()?,
            verbs: self.strings()?,
            names: self.opt(Reader::strings)?,
            name_locs: self.seq(Reader::at)?,
            loc: self.at()?,
            names_loc: self.opt(Reader::at)?,
            verbs_loc: self.opt(Reader::at)?,
        })
    }

    fn config_map(&mut self) -> Option<ConfigMapFacts> {
        Some(ConfigMapFacts {
            plan: self.opt(|r| {
                Some(Plan {
                    kind: r.string()?,
                    secrets: r.strings()?,
                    generators: r.strings()?,
                    pods: r.strings()?,
                    secret_locs: r.seq(Reader::at)?,
                    generator_locs: r.seq(Reader::at)?,
                })
            })?,
            hash_state: self.opt(|r| {
                let mut chain = [0u32; 8];
                for word in &mut chain {
                    *word = r.u32()?;
                }
                let pending = r.bytes()?.to_vec();
                let length = r.u64()?;
                (pending.len() as u64 == length % 64).then_some(Sha256State {
                    chain,
                    pending,
                    length,
                })
            })?,
            plan_text: self.opt(Reader::string)?,
            script: self.opt(Reader::string)?,
            script_loc: self.opt(Reader::at)?,
            other_data: self.seq(|r| Some((r.string()?, r.string()?)))?,
        })
    }

    fn job(&mut self) -> Option<JobFacts> {
        Some(JobFacts {
            name: self.string()?,
            pod_loc: self.at()?,
            service_account: self.opt(|r| Some((r.string()?, r.at()?)))?,
            volumes: self.seq(|r| {
                Some(Volume {
                    name: r.string()?,
                    config_map: r.opt(Reader::string)?,
                    loc: r.at()?,
                    items: r.opt(|r| {
                        let items = r.seq(|r| {
                            Some((r.string()?, r.opt(|r| Some(r.u64()? as i64))?, r.at()?))
                        })?;
                        Some((items, r.at()?))
                    })?,
                    optional: r.opt(Reader::at)?,
                    default_mode: r.opt(|r| Some((r.u64()? as i64, r.at()?)))?,
                })
            })?,
            container_loc: self.opt(Reader::at)?,
            mounts: self.seq(|r| {
                Some(Mount {
                    volume: r.string()?,
                    path: r.string()?,
                    loc: r.at()?,
                    sub_path: r.opt(|r| Some((r.string()?, r.at()?)))?,
                })
            })?,
            command: self.strings()?,
            command_loc: self.opt(Reader::at)?,
            image: self.opt(|r| Some((r.string()?, r.at()?)))?,
            automount: self.automount()?,
            fs_group: self.flag()?,
            run_as_user: self.opt(|r| Some(r.u64()? as i64))?,
            run_as_group: self.opt(|r| Some(r.u64()? as i64))?,
            env: self.container_env()?,
        })
    }

    fn container_env(&mut self) -> Option<ContainerEnv> {
        let env = self.seq(|r| {
            let name = r.string()?;
            let source = match r.u8()? {
                0 => EnvSource::Value(r.string()?),
                1 => EnvSource::Field(r.string()?),
                2 => EnvSource::Resource {
                    resource: r.string()?,
                    divisor: r.opt(Reader::string)?,
                },
                3 => EnvSource::Key(ObjectKey {
                    secret: r.flag()?,
                    name: r.string()?,
                    key: r.string()?,
                    optional: r.flag()?,
                }),
                4 => EnvSource::Invalid(r.string()?),
                _ => return None,
            };
            Some(EnvEntry { name, source })
        })?;
        let env_from = self.seq(|r| {
            Some(EnvFromEntry {
                secret: r.flag()?,
                name: r.string()?,
                prefix: r.string()?,
                optional: r.flag()?,
            })
        })?;
        let mut pairs = || self.seq(|r| Some((r.string()?, r.string()?)));
        let resources = pairs()?;
        let labels = pairs()?;
        let annotations = pairs()?;
        Some(ContainerEnv {
            env,
            env_from,
            resources,
            labels,
            annotations,
        })
    }
}
