//! kpassthrough: a read-only FUSE mirror of a source directory whose regular-file
//! opens are answered with Linux kernel FUSE passthrough (Linux >= 6.9,
//! CONFIG_FUSE_PASSTHROUGH=y): the server registers the opened source file as a
//! backing file (FUSE_DEV_IOC_BACKING_OPEN on /dev/fuse) and replies to OPEN with
//! FOPEN_PASSTHROUGH + the backing id, after which the kernel serves read(2) from
//! the backing file without a single READ request reaching this process.
//!
//! With `--passthrough off` the same binary answers READ requests itself
//! (pread into the reply): the user-space baseline.
//!
//! Ours, beyond the paper. See README.md.

use fuser::{
    consts, BackingId, FileAttr, FileType, Filesystem, KernelConfig, MountOption, ReplyAttr,
    ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, Request, Session,
};
use std::collections::HashMap;
use std::ffi::{CString, OsStr, OsString};
use std::fs::{File, Metadata};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const USAGE: &str = "usage: kpassthrough SOURCE MOUNTPOINT [--passthrough kernel|off|auto] \
[--stats FILE] [--ttl SECONDS] [--max-stack-depth 0|1|2] [--allow-other]

  --passthrough kernel  (default) every regular-file open is answered with kernel
                        passthrough; a kernel or connection without it fails the mount
  --passthrough off     the server answers every READ itself (user-space baseline)
  --passthrough auto    kernel passthrough when available, else off; logs its choice
  --stats FILE          per-op counters as JSON: written when ready, on SIGUSR1, at exit
  --ttl SECONDS         entry/attribute cache timeout (default 1)
  --max-stack-depth N   FUSE_INIT max_stack_depth (default 2; 0 makes the kernel refuse
                        backing files, which --passthrough kernel reports as an error)
  --allow-other         mount with allow_other

Runs in the foreground until SIGTERM/SIGINT (unmounts) or an external unmount.";

/// struct fuse_backing_map (include/uapi/linux/fuse.h)
#[repr(C)]
struct FuseBackingMap {
    fd: i32,
    flags: u32,
    padding: u64,
}
// _IOW(229, 1, struct fuse_backing_map) and _IOW(229, 2, uint32_t)
const FUSE_DEV_IOC_BACKING_OPEN: libc::c_ulong =
    (1 << 30) | ((std::mem::size_of::<FuseBackingMap>() as libc::c_ulong) << 16) | (229 << 8) | 1;
const FUSE_DEV_IOC_BACKING_CLOSE: libc::c_ulong = (1 << 30) | (4 << 16) | (229 << 8) | 2;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Kernel,
    Off,
    Auto,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Kernel => "kernel",
            Mode::Off => "off",
            Mode::Auto => "auto",
        }
    }
}

struct Config {
    source: PathBuf,
    mountpoint: PathBuf,
    mode: Mode,
    stats: Option<PathBuf>,
    ttl: Duration,
    max_stack_depth: u32,
    allow_other: bool,
}

fn die(msg: &str) -> ! {
    eprintln!("kpassthrough: error: {msg}");
    std::process::exit(2)
}

fn parse_args() -> Config {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let mut positional: Vec<PathBuf> = Vec::new();
    let mut mode = Mode::Kernel;
    let mut stats = None;
    let mut ttl = Duration::from_secs(1);
    let mut max_stack_depth = 2u32;
    let mut allow_other = false;
    let mut i = 0;
    let value = |i: usize, name: &str| -> String {
        match args.get(i + 1) {
            Some(v) => v.to_string_lossy().into_owned(),
            None => die(&format!("{name} needs a value\n{USAGE}")),
        }
    };
    while i < args.len() {
        let a = args[i].to_string_lossy().into_owned();
        match a.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0)
            }
            "--passthrough" => {
                mode = match value(i, "--passthrough").as_str() {
                    "kernel" => Mode::Kernel,
                    "off" => Mode::Off,
                    "auto" => Mode::Auto,
                    other => die(&format!(
                        "--passthrough must be kernel, off or auto (got {other:?})"
                    )),
                };
                i += 1;
            }
            "--stats" => {
                stats = Some(PathBuf::from(value(i, "--stats")));
                i += 1;
            }
            "--ttl" => {
                let v = value(i, "--ttl");
                let s: f64 = v
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s >= 0.0)
                    .unwrap_or_else(|| die(&format!("--ttl must be seconds >= 0 (got {v:?})")));
                ttl = Duration::from_secs_f64(s);
                i += 1;
            }
            "--max-stack-depth" => {
                let v = value(i, "--max-stack-depth");
                max_stack_depth = match v.parse::<u32>() {
                    Ok(n) if n <= 2 => n,
                    _ => die(&format!("--max-stack-depth must be 0, 1 or 2 (got {v:?})")),
                };
                i += 1;
            }
            "--allow-other" => allow_other = true,
            s if s.starts_with('-') => die(&format!("unknown option {s:?}\n{USAGE}")),
            _ => positional.push(PathBuf::from(&args[i])),
        }
        i += 1;
    }
    if positional.len() != 2 {
        die(&format!("need SOURCE and MOUNTPOINT\n{USAGE}"));
    }
    let mountpoint = positional.pop().unwrap();
    let source = positional.pop().unwrap();
    let source = source
        .canonicalize()
        .unwrap_or_else(|e| die(&format!("source {}: {e}", source.display())));
    if !source.is_dir() {
        die(&format!("source {} is not a directory", source.display()));
    }
    if !mountpoint.is_dir() {
        die(&format!("mountpoint {} is not a directory", mountpoint.display()));
    }
    Config { source, mountpoint, mode, stats, ttl, max_stack_depth, allow_other }
}

/// Counters shared between the FUSE session thread and the main (signal) thread.
#[derive(Default)]
struct Counters {
    init: AtomicU64,
    lookup: AtomicU64,
    getattr: AtomicU64,
    readlink: AtomicU64,
    opendir: AtomicU64,
    readdir: AtomicU64,
    releasedir: AtomicU64,
    open: AtomicU64,
    open_passthrough: AtomicU64,
    open_served: AtomicU64,
    open_fallback: AtomicU64,
    backing_open_failures: AtomicU64,
    read: AtomicU64,
    read_bytes: AtomicU64,
    release: AtomicU64,
    statfs: AtomicU64,
    errors: AtomicU64,
}

impl Counters {
    fn json(&self) -> String {
        let f = |a: &AtomicU64| a.load(SeqCst);
        format!(
            "{{\"init\": {}, \"lookup\": {}, \"getattr\": {}, \"readlink\": {}, \"opendir\": {}, \
\"readdir\": {}, \"releasedir\": {}, \"open\": {}, \"open_passthrough\": {}, \"open_served\": {}, \
\"open_fallback\": {}, \"backing_open_failures\": {}, \"read\": {}, \"read_bytes\": {}, \
\"release\": {}, \"statfs\": {}, \"errors\": {}}}",
            f(&self.init), f(&self.lookup), f(&self.getattr), f(&self.readlink), f(&self.opendir),
            f(&self.readdir), f(&self.releasedir), f(&self.open), f(&self.open_passthrough),
            f(&self.open_served), f(&self.open_fallback), f(&self.backing_open_failures),
            f(&self.read), f(&self.read_bytes), f(&self.release), f(&self.statfs), f(&self.errors)
        )
    }
}

fn bump(a: &AtomicU64) {
    a.fetch_add(1, SeqCst);
}

struct Shared {
    counters: Counters,
    /// passthrough in use for opens (decided at init, confirmed by the probe)
    passthrough: AtomicBool,
    init_done: AtomicBool,
    session_ended: AtomicBool,
    init_error: Mutex<Option<String>>,
    reason: Mutex<String>,
}

enum Handle {
    /// kernel passthrough: the kernel reads the backing file; we only hold the id
    Backing(#[allow(dead_code)] BackingId),
    /// user-space serving: we pread the source file
    Served(File),
}

struct MirrorFs {
    shared: Arc<Shared>,
    mode: Mode,
    ttl: Duration,
    max_stack_depth: u32,
    paths: Vec<PathBuf>, // index = ino - 1
    inos: HashMap<PathBuf, u64>,
    handles: HashMap<u64, Handle>,
    dirs: HashMap<u64, Vec<(u64, FileType, OsString)>>,
    next_fh: u64,
    buf: Vec<u8>,
}

fn errno_of(e: &std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

fn kind_of(ft: std::fs::FileType) -> FileType {
    if ft.is_dir() {
        FileType::Directory
    } else if ft.is_symlink() {
        FileType::Symlink
    } else if ft.is_block_device() {
        FileType::BlockDevice
    } else if ft.is_char_device() {
        FileType::CharDevice
    } else if ft.is_fifo() {
        FileType::NamedPipe
    } else if ft.is_socket() {
        FileType::Socket
    } else {
        FileType::RegularFile
    }
}

fn ts(secs: i64, nsec: i64) -> SystemTime {
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nsec as u32)
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs()) + Duration::from_nanos(nsec as u64)
    }
}

fn attr_of(ino: u64, m: &Metadata) -> FileAttr {
    FileAttr {
        ino,
        size: m.size(),
        blocks: m.blocks(),
        atime: ts(m.atime(), m.atime_nsec()),
        mtime: ts(m.mtime(), m.mtime_nsec()),
        ctime: ts(m.ctime(), m.ctime_nsec()),
        crtime: UNIX_EPOCH,
        kind: kind_of(m.file_type()),
        perm: (m.mode() & 0o7777) as u16,
        nlink: m.nlink() as u32,
        uid: m.uid(),
        gid: m.gid(),
        rdev: m.rdev() as u32,
        blksize: m.blksize() as u32,
        flags: 0,
    }
}

impl MirrorFs {
    fn new(cfg: &Config, shared: Arc<Shared>) -> Self {
        let mut fs = MirrorFs {
            shared,
            mode: cfg.mode,
            ttl: cfg.ttl,
            max_stack_depth: cfg.max_stack_depth,
            paths: Vec::new(),
            inos: HashMap::new(),
            handles: HashMap::new(),
            dirs: HashMap::new(),
            next_fh: 0,
            buf: Vec::new(),
        };
        let root = fs.ino_for(cfg.source.clone());
        assert_eq!(root, fuser::FUSE_ROOT_ID);
        fs
    }

    /// Stable inode numbers of our own (1 = root), one per source path.
    fn ino_for(&mut self, path: PathBuf) -> u64 {
        if let Some(&ino) = self.inos.get(&path) {
            return ino;
        }
        self.paths.push(path.clone());
        let ino = self.paths.len() as u64;
        self.inos.insert(path, ino);
        ino
    }

    fn path(&self, ino: u64) -> Option<&PathBuf> {
        self.paths.get((ino as usize).wrapping_sub(1))
    }

    fn fail(&self, err: i32) -> i32 {
        bump(&self.shared.counters.errors);
        err
    }
}

impl Filesystem for MirrorFs {
    fn init(&mut self, _req: &Request<'_>, config: &mut KernelConfig) -> Result<(), libc::c_int> {
        let sh = &self.shared;
        bump(&sh.counters.init);
        if self.mode == Mode::Off {
            *sh.reason.lock().unwrap() = "requested --passthrough off".into();
            sh.init_done.store(true, SeqCst);
            return Ok(());
        }
        // Test hook: behave as on a kernel that does not offer FUSE_PASSTHROUGH (< 6.9).
        let hidden = std::env::var_os("KPASSTHROUGH_TEST_HIDE_CAPABILITY").is_some();
        let offered = !hidden && config.add_capabilities(consts::FUSE_PASSTHROUGH).is_ok();
        if !offered {
            let msg = format!(
                "the kernel did not offer FUSE_PASSTHROUGH in FUSE_INIT{} (needs Linux >= 6.9 \
built with CONFIG_FUSE_PASSTHROUGH=y; this is {})",
                if hidden { " [KPASSTHROUGH_TEST_HIDE_CAPABILITY set]" } else { "" },
                kernel_release()
            );
            if self.mode == Mode::Kernel {
                *sh.init_error.lock().unwrap() = Some(msg);
                return Err(libc::ENOSYS);
            }
            *sh.reason.lock().unwrap() = msg;
            sh.passthrough.store(false, SeqCst);
        } else {
            if let Err(n) = config.set_max_stack_depth(self.max_stack_depth) {
                *sh.init_error.lock().unwrap() = Some(format!("max_stack_depth rejected, max {n}"));
                return Err(libc::EINVAL);
            }
            *sh.reason.lock().unwrap() = format!(
                "kernel offered FUSE_PASSTHROUGH; requested it with max_stack_depth={}",
                self.max_stack_depth
            );
            sh.passthrough.store(true, SeqCst);
        }
        sh.init_done.store(true, SeqCst);
        Ok(())
    }

    fn lookup(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        bump(&self.shared.counters.lookup);
        let Some(dir) = self.path(parent) else {
            return reply.error(self.fail(libc::ENOENT));
        };
        let path = dir.join(name);
        match std::fs::symlink_metadata(&path) {
            Ok(m) => {
                let ino = self.ino_for(path);
                reply.entry(&self.ttl, &attr_of(ino, &m), 0)
            }
            Err(e) => reply.error(errno_of(&e)),
        }
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, _fh: Option<u64>, reply: ReplyAttr) {
        bump(&self.shared.counters.getattr);
        let Some(path) = self.path(ino) else {
            return reply.error(self.fail(libc::ENOENT));
        };
        match std::fs::symlink_metadata(path) {
            Ok(m) => reply.attr(&self.ttl, &attr_of(ino, &m)),
            Err(e) => reply.error(self.fail(errno_of(&e))),
        }
    }

    fn readlink(&mut self, _req: &Request<'_>, ino: u64, reply: ReplyData) {
        bump(&self.shared.counters.readlink);
        let Some(path) = self.path(ino) else {
            return reply.error(self.fail(libc::ENOENT));
        };
        match std::fs::read_link(path) {
            Ok(t) => reply.data(t.as_os_str().as_bytes()),
            Err(e) => reply.error(self.fail(errno_of(&e))),
        }
    }

    fn opendir(&mut self, _req: &Request<'_>, ino: u64, _flags: i32, reply: ReplyOpen) {
        bump(&self.shared.counters.opendir);
        let Some(path) = self.path(ino).cloned() else {
            return reply.error(self.fail(libc::ENOENT));
        };
        let rd = match std::fs::read_dir(&path) {
            Ok(rd) => rd,
            Err(e) => return reply.error(self.fail(errno_of(&e))),
        };
        let parent_ino = match path.parent() {
            Some(p) if ino != fuser::FUSE_ROOT_ID => self.ino_for(p.to_path_buf()),
            _ => fuser::FUSE_ROOT_ID,
        };
        let mut entries = vec![
            (ino, FileType::Directory, OsString::from(".")),
            (parent_ino, FileType::Directory, OsString::from("..")),
        ];
        let mut rest = Vec::new();
        for ent in rd {
            let ent = match ent {
                Ok(e) => e,
                Err(e) => return reply.error(self.fail(errno_of(&e))),
            };
            let kind = match ent.file_type() {
                Ok(t) => kind_of(t),
                Err(e) => return reply.error(self.fail(errno_of(&e))),
            };
            rest.push((ent.file_name(), kind));
        }
        rest.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, kind) in rest {
            let child = self.ino_for(path.join(&name));
            entries.push((child, kind, name));
        }
        self.next_fh += 1;
        self.dirs.insert(self.next_fh, entries);
        reply.opened(self.next_fh, 0)
    }

    fn readdir(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        offset: i64,
        mut reply: ReplyDirectory,
    ) {
        bump(&self.shared.counters.readdir);
        let Some(entries) = self.dirs.get(&fh) else {
            return reply.error(self.fail(libc::EBADF));
        };
        for (i, (ino, kind, name)) in entries.iter().enumerate().skip(offset.max(0) as usize) {
            if reply.add(*ino, (i + 1) as i64, *kind, name) {
                break;
            }
        }
        reply.ok()
    }

    fn releasedir(&mut self, _req: &Request<'_>, _ino: u64, fh: u64, _flags: i32, reply: ReplyEmpty) {
        bump(&self.shared.counters.releasedir);
        self.dirs.remove(&fh);
        reply.ok()
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, flags: i32, reply: ReplyOpen) {
        let c = &self.shared.counters;
        bump(&c.open);
        if flags & libc::O_ACCMODE != libc::O_RDONLY {
            return reply.error(self.fail(libc::EROFS));
        }
        let Some(path) = self.path(ino).cloned() else {
            return reply.error(self.fail(libc::ENOENT));
        };
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) => return reply.error(self.fail(errno_of(&e))),
        };
        self.next_fh += 1;
        let fh = self.next_fh;
        let is_reg = file.metadata().map(|m| m.is_file()).unwrap_or(false);
        if is_reg && self.shared.passthrough.load(SeqCst) {
            match reply.open_backing(file.as_fd()) {
                Ok(id) => {
                    bump(&c.open_passthrough);
                    reply.opened_passthrough(fh, 0, &id);
                    // the id must outlive the kernel's use of it: closed on release
                    self.handles.insert(fh, Handle::Backing(id));
                    return;
                }
                Err(e) => {
                    bump(&c.backing_open_failures);
                    if self.mode == Mode::Kernel {
                        eprintln!(
                            "kpassthrough: error: FUSE_DEV_IOC_BACKING_OPEN refused for {}: {e}; \
failing the open (no silent fallback with --passthrough kernel)",
                            path.display()
                        );
                        return reply.error(self.fail(libc::EIO));
                    }
                    eprintln!(
                        "kpassthrough: auto: backing open refused for {} ({e}); serving it from user space",
                        path.display()
                    );
                    bump(&c.open_fallback);
                }
            }
        }
        bump(&c.open_served);
        self.handles.insert(fh, Handle::Served(file));
        reply.opened(fh, 0)
    }

    fn read(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        offset: i64,
        size: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyData,
    ) {
        let c = &self.shared.counters;
        bump(&c.read);
        let file = match self.handles.get(&fh) {
            Some(Handle::Served(f)) => f,
            // a READ for a passthrough handle would mean the kernel did not pass it through
            Some(Handle::Backing(_)) | None => {
                c.errors.fetch_add(1, SeqCst);
                return reply.error(libc::EBADF);
            }
        };
        let size = size as usize;
        if self.buf.len() < size {
            self.buf.resize(size, 0);
        }
        let mut done = 0usize;
        while done < size {
            match file.read_at(&mut self.buf[done..size], offset as u64 + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    c.errors.fetch_add(1, SeqCst);
                    return reply.error(errno_of(&e));
                }
            }
        }
        c.read_bytes.fetch_add(done as u64, SeqCst);
        reply.data(&self.buf[..done])
    }

    fn release(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        _flags: i32,
        _lock_owner: Option<u64>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        bump(&self.shared.counters.release);
        // dropping a BackingId issues FUSE_DEV_IOC_BACKING_CLOSE
        self.handles.remove(&fh);
        reply.ok()
    }

    fn statfs(&mut self, _req: &Request<'_>, _ino: u64, reply: ReplyStatfs) {
        bump(&self.shared.counters.statfs);
        let p = CString::new(self.paths[0].as_os_str().as_bytes()).unwrap();
        let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statvfs(p.as_ptr(), &mut s) } != 0 {
            return reply.error(self.fail(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)));
        }
        reply.statfs(
            s.f_blocks as u64,
            s.f_bfree as u64,
            s.f_bavail as u64,
            s.f_files as u64,
            s.f_ffree as u64,
            s.f_bsize as u32,
            s.f_namemax as u32,
            s.f_frsize as u32,
        )
    }
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| format!("Linux {}", s.trim()))
        .unwrap_or_else(|_| "an unknown kernel".into())
}

/// Register and immediately unregister an anonymous regular file (memfd) as a backing
/// file: proves the kernel accepts FUSE_DEV_IOC_BACKING_OPEN on this connection
/// (it refuses with EPERM when passthrough was not enabled at FUSE_INIT or without
/// CAP_SYS_ADMIN, ENOTTY/EINVAL on kernels that do not know the ioctl).
fn probe_backing(dev: &OwnedFd) -> Result<(), String> {
    let name = CString::new("kpassthrough-probe").unwrap();
    let mfd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if mfd < 0 {
        return Err(format!("memfd_create for the probe: {}", std::io::Error::last_os_error()));
    }
    let map = FuseBackingMap { fd: mfd, flags: 0, padding: 0 };
    let id = unsafe { libc::ioctl(dev.as_raw_fd(), FUSE_DEV_IOC_BACKING_OPEN as _, &map) };
    let err = std::io::Error::last_os_error();
    unsafe { libc::close(mfd) };
    if id < 0 {
        let hint = match err.raw_os_error() {
            Some(libc::EPERM) => "passthrough not enabled on this connection (FUSE_INIT) or no CAP_SYS_ADMIN",
            Some(libc::ENOTTY) | Some(libc::EINVAL) => "this kernel does not support backing files",
            _ => "unexpected",
        };
        return Err(format!("FUSE_DEV_IOC_BACKING_OPEN refused by the kernel: {err} ({hint})"));
    }
    let id32 = id as u32;
    if unsafe { libc::ioctl(dev.as_raw_fd(), FUSE_DEV_IOC_BACKING_CLOSE as _, &id32) } < 0 {
        return Err(format!("FUSE_DEV_IOC_BACKING_CLOSE: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

fn write_stats(cfg: &Config, sh: &Shared, state: &str) {
    let Some(path) = &cfg.stats else { return };
    let esc = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    let json = format!(
        "{{\"state\": \"{}\", \"pid\": {}, \"requested\": \"{}\", \"passthrough\": \"{}\", \
\"reason\": \"{}\", \"source\": \"{}\", \"mountpoint\": \"{}\", \"kernel\": \"{}\", \"ops\": {}}}\n",
        state,
        std::process::id(),
        cfg.mode.name(),
        if sh.passthrough.load(SeqCst) { "kernel" } else { "off" },
        esc(&sh.reason.lock().unwrap()),
        esc(&cfg.source.to_string_lossy()),
        esc(&cfg.mountpoint.to_string_lossy()),
        esc(&kernel_release()),
        sh.counters.json()
    );
    let tmp = path.with_extension("tmp");
    if let Err(e) = std::fs::write(&tmp, json).and_then(|_| std::fs::rename(&tmp, path)) {
        eprintln!("kpassthrough: warning: cannot write stats {}: {e}", path.display());
    }
}

fn is_mounted(mp: &Path) -> bool {
    let Ok(canon) = mp.canonicalize() else { return false };
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else { return false };
    let want = canon.to_string_lossy().replace(' ', "\\040");
    info.lines().any(|l| {
        let f: Vec<&str> = l.split(' ').collect();
        f.len() > 4 && f[4] == want && l.contains(" - fuse")
    })
}

fn main() {
    let cfg = parse_args();

    // All threads inherit this mask; the main thread takes the signals with sigwait.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    unsafe {
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGUSR1, libc::SIGUSR2] {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }

    let shared = Arc::new(Shared {
        counters: Counters::default(),
        passthrough: AtomicBool::new(false),
        init_done: AtomicBool::new(false),
        session_ended: AtomicBool::new(false),
        init_error: Mutex::new(None),
        reason: Mutex::new(String::new()),
    });
    let fs = MirrorFs::new(&cfg, shared.clone());
    let mut options = vec![
        MountOption::RO,
        MountOption::FSName(format!("kpassthrough:{}", cfg.source.display())),
        MountOption::Subtype("kpassthrough".into()),
    ];
    if cfg.allow_other {
        options.push(MountOption::AllowOther);
    }
    let mut session = Session::new(fs, &cfg.mountpoint, &options)
        .unwrap_or_else(|e| die(&format!("mount at {}: {e}", cfg.mountpoint.display())));
    let dev = session
        .as_fd()
        .try_clone_to_owned()
        .unwrap_or_else(|e| die(&format!("dup /dev/fuse: {e}")));
    let mut unmounter = session.unmount_callable();
    let sh2 = shared.clone();
    let worker = std::thread::spawn(move || {
        let r = session.run();
        drop(session);
        sh2.session_ended.store(true, SeqCst);
        unsafe { libc::kill(libc::getpid(), libc::SIGUSR2) };
        r
    });

    let unmount = |unmounter: &mut fuser::SessionUnmounter| {
        let _ = unmounter.unmount();
        if is_mounted(&cfg.mountpoint) {
            // busy: detach lazily; the session ends when the last user goes
            if let Ok(p) = CString::new(cfg.mountpoint.as_os_str().as_bytes()) {
                unsafe { libc::umount2(p.as_ptr(), libc::MNT_DETACH) };
            }
        }
    };
    let fail = |msg: String, unmounter: &mut fuser::SessionUnmounter, dev: OwnedFd| -> ! {
        eprintln!("kpassthrough: error: {msg}");
        shared.passthrough.store(false, SeqCst);
        *shared.reason.lock().unwrap() = msg;
        drop(dev);
        unmount(unmounter);
        write_stats(&cfg, &shared, "failed");
        std::process::exit(1)
    };

    // Wait for FUSE_INIT to be answered, then make the kernel process the reply.
    let t0 = Instant::now();
    loop {
        if let Some(msg) = shared.init_error.lock().unwrap().clone() {
            fail(format!("mount refused: {msg}"), &mut unmounter, dev);
        }
        if shared.init_done.load(SeqCst) {
            break;
        }
        if shared.session_ended.load(SeqCst) || t0.elapsed() > Duration::from_secs(20) {
            fail("FUSE session ended or no FUSE_INIT within 20 s".into(), &mut unmounter, dev);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    // Any request after INIT is queued behind its reply: once it is answered the
    // connection's passthrough flag is settled.
    if let Err(e) = std::fs::read_dir(&cfg.mountpoint) {
        fail(format!("first request through the mount failed: {e}"), &mut unmounter, dev);
    }
    if shared.passthrough.load(SeqCst) {
        if let Err(msg) = probe_backing(&dev) {
            if cfg.mode == Mode::Kernel {
                fail(format!("mount refused: {msg} (no silent fallback with --passthrough kernel)"), &mut unmounter, dev);
            }
            shared.passthrough.store(false, SeqCst);
            *shared.reason.lock().unwrap() = msg;
        } else {
            let mut r = shared.reason.lock().unwrap();
            r.push_str("; backing-file probe accepted");
        }
    }
    drop(dev);
    let chosen = if shared.passthrough.load(SeqCst) { "kernel" } else { "off" };
    eprintln!(
        "kpassthrough: {} mounted at {} (requested {}, chose passthrough={}: {})",
        cfg.source.display(),
        cfg.mountpoint.display(),
        cfg.mode.name(),
        chosen,
        shared.reason.lock().unwrap()
    );
    write_stats(&cfg, &shared, "ready");

    loop {
        let mut sig: libc::c_int = 0;
        if unsafe { libc::sigwait(&set, &mut sig) } != 0 {
            continue;
        }
        match sig {
            libc::SIGUSR1 => write_stats(&cfg, &shared, "running"),
            libc::SIGUSR2 => {
                if shared.session_ended.load(SeqCst) {
                    break;
                }
            }
            _ => unmount(&mut unmounter),
        }
    }
    let r = worker.join();
    write_stats(&cfg, &shared, "exited");
    match r {
        Ok(Ok(())) => eprintln!("kpassthrough: unmounted {}", cfg.mountpoint.display()),
        Ok(Err(e)) => die(&format!("FUSE session: {e}")),
        Err(_) => die("FUSE session thread panicked"),
    }
}
