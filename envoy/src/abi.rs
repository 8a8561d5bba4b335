//! Envoy's dynamic-module C ABI, the part the module uses, declared by hand.
//!
//! The ABI is one C header in Envoy's repository,
//! `source/extensions/dynamic_modules/abi/abi.h`. What is here was read from
//! that header as it stood for Envoy 1.40, and checked against the binary
//! the tests run (`envoy --version`: `9e5580933739775e8bce696a57a2e1bc99368f23/1.40.0`):
//! each callback below is one of its dynamic symbols (`nm -D`), and the
//! arguments each reads were checked in its machine code (docs/edge.md,
//! "In-process module (preview)", says how). Nothing else of the header is
//! declared: a callback the module does not call cannot be called wrongly.
//!
//! Conventions of the header. A `*_envoy_ptr` is Envoy's object, a
//! `*_module_ptr` the module's. An [`EnvoyBuffer`] is bytes Envoy owns, valid
//! until the end of the current event hook (unless a setter changes them); a
//! [`ModuleBuffer`] is bytes the module owns, which Envoy copies before the
//! call returns. C enums are `int`: 32 bits here. A two-word struct passed
//! by value (a buffer) takes two integer registers on x86-64 and AArch64
//! alike, as its two words would.

use std::ffi::c_void;

/// `envoy_dynamic_module_type_envoy_buffer`: bytes Envoy owns.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct EnvoyBuffer {
    pub ptr: *const u8,
    pub length: usize,
}

impl EnvoyBuffer {
    pub const NULL: EnvoyBuffer = EnvoyBuffer { ptr: std::ptr::null(), length: 0 };

    /// The bytes.
    ///
    /// # Safety
    /// Envoy's buffer, still valid (the current event hook, no setter since).
    pub unsafe fn bytes<'a>(self) -> &'a [u8] {
        if self.ptr.is_null() {
            return &[];
        }
        // SAFETY: Envoy's `length` bytes at `ptr`, valid as the caller says.
        unsafe { std::slice::from_raw_parts(self.ptr, self.length) }
    }
}

/// `envoy_dynamic_module_type_module_buffer`: bytes the module owns.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ModuleBuffer {
    pub ptr: *const u8,
    pub length: usize,
}

impl ModuleBuffer {
    /// `bytes`, lent for one call.
    pub fn of(bytes: &[u8]) -> ModuleBuffer {
        ModuleBuffer { ptr: bytes.as_ptr(), length: bytes.len() }
    }
}

/// `envoy_dynamic_module_type_envoy_http_header`: a header Envoy owns.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct EnvoyHeader {
    pub key_ptr: *const u8,
    pub key_length: usize,
    pub value_ptr: *const u8,
    pub value_length: usize,
}

/// `envoy_dynamic_module_type_module_http_header`: a header the module owns.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ModuleHeader {
    pub key_ptr: *const u8,
    pub key_length: usize,
    pub value_ptr: *const u8,
    pub value_length: usize,
}

impl ModuleHeader {
    pub fn of(key: &[u8], value: &[u8]) -> ModuleHeader {
        ModuleHeader {
            key_ptr: key.as_ptr(),
            key_length: key.len(),
            value_ptr: value.as_ptr(),
            value_length: value.len(),
        }
    }
}

/// `envoy_dynamic_module_type_http_header_type`.
pub type HeaderType = u32;
pub const REQUEST_HEADER: HeaderType = 0;
pub const RESPONSE_HEADER: HeaderType = 2;

/// `envoy_dynamic_module_type_attribute_id`: the place of `source.address`
/// in the enumeration (the downstream peer after the connection manager's
/// `xff_num_trusted_hops`).
pub type AttributeId = u32;
pub const SOURCE_ADDRESS: AttributeId = 24;

/// `envoy_dynamic_module_type_log_level`.
pub type LogLevel = u32;
pub const LOG_INFO: LogLevel = 2;
pub const LOG_WARN: LogLevel = 3;
pub const LOG_ERROR: LogLevel = 4;

/// `envoy_dynamic_module_type_on_http_filter_request_headers_status` (and
/// the other phases' statuses, whose first two values are the same).
pub type Status = u32;
/// `Continue`: the next filter goes on.
pub const CONTINUE: Status = 0;
/// `StopIteration` (headers, trailers) / `StopIterationAndBuffer` (body):
/// the stream waits for the module (a local reply sent, or a lookup).
pub const STOP: Status = 1;

/// `envoy_dynamic_module_type_metrics_result`: `Success` is 0.
pub type MetricsResult = u32;
pub const METRICS_SUCCESS: MetricsResult = 0;

/// `envoy_dynamic_module_type_http_filter_config_envoy_ptr`.
pub type ConfigEnvoyPtr = *mut c_void;
/// `envoy_dynamic_module_type_http_filter_envoy_ptr`.
pub type FilterEnvoyPtr = *mut c_void;
/// `envoy_dynamic_module_type_http_filter_config_module_ptr` and
/// `envoy_dynamic_module_type_http_filter_module_ptr`.
pub type ModulePtr = *const c_void;

// The callbacks Envoy implements, resolved from the Envoy binary when it
// loads the module (its dynamic symbols).
extern "C" {
    /// `envoy_dynamic_module_callback_log(level, message)`.
    pub fn envoy_dynamic_module_callback_log(level: LogLevel, message: ModuleBuffer);

    /// One value of a header: `index` of the values of `key` (lower case),
    /// into `result`; `optional_size` (may be null) gets how many there are.
    pub fn envoy_dynamic_module_callback_http_get_header(
        filter: FilterEnvoyPtr,
        header_type: HeaderType,
        key: ModuleBuffer,
        result: *mut EnvoyBuffer,
        index: usize,
        optional_size: *mut usize,
    ) -> bool;

    /// How many headers a header map has.
    pub fn envoy_dynamic_module_callback_http_get_headers_size(
        filter: FilterEnvoyPtr,
        header_type: HeaderType,
    ) -> usize;

    /// Every header of a map, into `result` (room for the size above),
    /// pseudo-headers (`:path`, `:authority`...) first.
    pub fn envoy_dynamic_module_callback_http_get_headers(
        filter: FilterEnvoyPtr,
        header_type: HeaderType,
        result: *mut EnvoyHeader,
    ) -> bool;

    /// Add a value to a header of a map.
    pub fn envoy_dynamic_module_callback_http_add_header(
        filter: FilterEnvoyPtr,
        header_type: HeaderType,
        key: ModuleBuffer,
        value: ModuleBuffer,
    ) -> bool;

    /// Answer the stream with `status`, `headers`, `body`; `details` names
    /// why in Envoy's access log (`%RESPONSE_CODE_DETAILS%`).
    pub fn envoy_dynamic_module_callback_http_send_response(
        filter: FilterEnvoyPtr,
        status: u32,
        headers: *const ModuleHeader,
        headers_len: usize,
        body: ModuleBuffer,
        details: ModuleBuffer,
    );

    /// Define a counter with these label names, in the filter
    /// configuration's stats scope; its id into `id`. Only while the
    /// configuration is made (`…_on_http_filter_config_new`): Envoy
    /// freezes the creation of stats after it.
    pub fn envoy_dynamic_module_callback_http_filter_config_define_counter(
        config: ConfigEnvoyPtr,
        name: ModuleBuffer,
        label_names: *const ModuleBuffer,
        label_names_len: usize,
        id: *mut usize,
    ) -> MetricsResult;

    /// Add `value` to counter `id` with these label values (as many as
    /// its label names).
    pub fn envoy_dynamic_module_callback_http_filter_increment_counter(
        filter: FilterEnvoyPtr,
        id: usize,
        label_values: *const ModuleBuffer,
        label_values_len: usize,
        value: u64,
    ) -> MetricsResult;

    /// A scheduler for this stream (on its worker thread, in a hook): see
    /// [`crate::park`].
    pub fn envoy_dynamic_module_callback_http_filter_scheduler_new(filter: FilterEnvoyPtr) -> *mut c_void;

    /// Have Envoy call `…_on_http_filter_scheduled(…, event)` on the
    /// stream's worker thread (from any thread; nothing if the stream is gone).
    pub fn envoy_dynamic_module_callback_http_filter_scheduler_commit(scheduler: *mut c_void, event: u64);

    /// Delete a scheduler (once).
    pub fn envoy_dynamic_module_callback_http_filter_scheduler_delete(scheduler: *mut c_void);

    /// Let a stream stopped in its request headers go on (after a lookup).
    pub fn envoy_dynamic_module_callback_http_filter_continue_decoding(filter: FilterEnvoyPtr);

    /// A string attribute of the stream (`source.address`: `ip:port`).
    pub fn envoy_dynamic_module_callback_http_filter_get_attribute_string(
        filter: FilterEnvoyPtr,
        attribute: AttributeId,
        result: *mut EnvoyBuffer,
    ) -> bool;
}
