//! Generates the checked-in bindings of prism-gpu: `src/sys/driver.rs`, `src/sys/nvrtc.rs` and
//! `src/sys/nccl.rs`.
//!
//! bindgen turns each library's header wrapper (`wrapper.h`, `wrapper_nccl.h`) into types and `extern "C"` declarations; the declarations are then
//! rewritten into a table of optional function pointers, resolved at run time through libloading,
//! whose methods return an error for a symbol the loaded library lacks instead of panicking.
//!
//! Usage: `regen-bindings <crate root> <include dir>...` (scripts/regen passes the CUDA toolkit's
//! and NCCL's include folders; every library is generated with all of them on the include path).

use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One library to bind.
struct Library {
    /// Header wrapper bindgen reads (beside this tool), relative to the crate root.
    wrapper: &'static str,
    /// The headers it comes from, for the generated file's first line.
    headers: &'static str,
    /// Output file, relative to the crate root.
    output: &'static str,
    /// What the table binds, for the docs.
    what: &'static str,
    /// Name of the generated function table.
    table: &'static str,
    functions: &'static str,
    types: &'static str,
    vars: &'static str,
    /// Enums that get a `name()` method (the variant's name).
    named_enums: &'static [&'static str],
    /// The status type the functions return, its success variant, and its variant for a code
    /// these bindings do not know.
    result: (&'static str, &'static str, &'static str),
    /// Free-function wrappers over the process-wide library (cudarc's `sys::cuInit` and so on).
    free_functions: Option<FreeFunctions>,
}

/// How the free functions of one library reach it and report that it is unusable.
struct FreeFunctions {
    /// The library's name in `sys::loader`: `<loader>_library()` returns the process-wide library.
    loader: &'static str,
    /// The library in the docs ("driver").
    library: &'static str,
    /// Whose documentation states the functions' contracts ("CUDA").
    documented_by: &'static str,
    /// The status when no library could be loaded.
    no_library: &'static str,
    /// The status when the loaded library lacks the function.
    no_symbol: &'static str,
}

const LIBRARIES: &[Library] = &[
    Library {
        wrapper: "tools/regen-bindings/wrapper.h",
        headers: "the CUDA 13.0 headers",
        output: "src/sys/driver.rs",
        what: "the CUDA driver API (cuda.h)",
        table: "DriverFunctions",
        functions: "^cu[A-Z].*",
        types: "^(CU|cu).*",
        vars: "^CU.*",
        named_enums: &["cudaError_enum"],
        result: ("CUresult", "CUDA_SUCCESS", "CUDA_ERROR_UNKNOWN"),
        free_functions: Some(FreeFunctions {
            loader: "driver",
            library: "driver",
            documented_by: "CUDA",
            no_library: "CUDA_ERROR_NO_DEVICE",
            no_symbol: "CUDA_ERROR_NOT_FOUND",
        }),
    },
    Library {
        wrapper: "tools/regen-bindings/wrapper.h",
        headers: "the CUDA 13.0 headers",
        output: "src/sys/nvrtc.rs",
        what: "NVRTC (nvrtc.h)",
        table: "NvrtcFunctions",
        functions: "^nvrtc.*",
        types: "^nvrtc.*",
        vars: "^NVRTC.*",
        named_enums: &["nvrtcResult"],
        result: ("nvrtcResult", "NVRTC_SUCCESS", "NVRTC_ERROR_INTERNAL_ERROR"),
        // cudarc's `nvrtc::sys` has the calls as free functions. NVRTC has no status for a
        // missing library or entry point: `nvrtc::result` reports both as a failure to create a
        // program, and so do these.
        free_functions: Some(FreeFunctions {
            loader: "nvrtc",
            library: "NVRTC library",
            documented_by: "NVRTC",
            no_library: "NVRTC_ERROR_PROGRAM_CREATION_FAILURE",
            no_symbol: "NVRTC_ERROR_PROGRAM_CREATION_FAILURE",
        }),
    },
    Library {
        wrapper: "tools/regen-bindings/wrapper_nccl.h",
        headers: "the NCCL 2.28.9 header (PyPI nvidia-nccl-cu13)",
        output: "src/sys/nccl.rs",
        what: "NCCL (nccl.h)",
        table: "NcclFunctions",
        functions: "^nccl.*",
        types: "^nccl.*",
        vars: "^NCCL_.*",
        named_enums: &["ncclResult_t"],
        result: ("ncclResult_t", "ncclSuccess", "ncclInternalError"),
        // No library, or one without the function, is a failed system call or library in NCCL's
        // terms; `nccl::result::NcclError` reports the loader's reason beside it.
        free_functions: Some(FreeFunctions {
            loader: "nccl",
            library: "NCCL library",
            documented_by: "NCCL",
            no_library: "ncclSystemError",
            no_symbol: "ncclSystemError",
        }),
    },
];

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(root) = args.next() else {
        eprintln!("usage: regen-bindings <crate root> <include dir>...");
        std::process::exit(2);
    };
    let includes: Vec<PathBuf> = args.map(PathBuf::from).collect();
    if includes.is_empty() {
        eprintln!("usage: regen-bindings <crate root> <include dir>...");
        std::process::exit(2);
    }
    let root = PathBuf::from(root);
    for lib in LIBRARIES {
        let code = generate(lib, &root.join(lib.wrapper), &includes);
        let path = root.join(lib.output);
        std::fs::write(&path, code).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        println!("wrote {}", path.display());
    }
}

fn generate(lib: &Library, wrapper: &Path, includes: &[PathBuf]) -> String {
    let raw = bindgen::Builder::default()
        .header(wrapper.to_string_lossy())
        .clang_args(includes.iter().map(|include| format!("-I{}", include.display())))
        .allowlist_function(lib.functions)
        .allowlist_type(lib.types)
        .allowlist_var(lib.vars)
        // Plain Rust enums, as cudarc has them, so callers' exhaustive matches compile. Values the
        // library hands back cross the FFI boundary as integers instead (see `Enums`), so an unknown
        // value from a newer library is never undefined behaviour.
        .default_enum_style(bindgen::EnumVariation::Rust { non_exhaustive: false })
        .prepend_enum_name(false)
        .derive_eq(true)
        .derive_hash(true)
        .derive_partialord(true)
        .derive_ord(true)
        // No `Default`: bindgen would zero-fill structs holding enums, which is undefined behaviour
        // for enums without a zero value (cudarc derives none either).
        .derive_default(false)
        .generate_comments(false)
        .layout_tests(false)
        .merge_extern_blocks(true)
        .generate()
        .expect("bindgen failed")
        .to_string();
    let file = syn::parse_file(&raw).expect("bindgen output parses");

    let mut types = Vec::new();
    let mut functions = Vec::new();
    for item in file.items {
        match item {
            syn::Item::ForeignMod(block) => {
                for foreign in block.items {
                    if let syn::ForeignItem::Fn(f) = foreign {
                        functions.push(f.sig);
                    }
                }
            }
            other => types.push(other),
        }
    }
    functions.sort_by(|a, b| a.ident.cmp(&b.ident));
    let enums = Enums::collect(&types);
    let conversions = enums.conversions();
    let names = lib.named_enums.iter().map(|e| enums.name_method(e));
    let (result, success, unknown_result) = lib.result;
    let result = Ident::new(result, Span::call_site());
    let success = Ident::new(success, Span::call_site());
    let unknown_result = Ident::new(unknown_result, Span::call_site());

    let table = Ident::new(lib.table, Span::call_site());
    let fields = functions.iter().map(|sig| {
        let name = &sig.ident;
        let ty = enums.fn_pointer_type(sig);
        quote! { #name: Option<#ty>, }
    });
    let resolves = functions.iter().map(|sig| {
        let name = &sig.ident;
        let symbol = syn::LitByteStr::new(format!("{name}\0").as_bytes(), Span::call_site());
        quote! { #name: resolve(library, #symbol), }
    });
    let methods = functions.iter().map(|sig| {
        let name = &sig.ident;
        // Enums by value keep their type (an enum always converts to its integer); pointers to
        // enums are integer pointers here, since the library may write a value the enum lacks.
        let params = sig.inputs.iter().map(|arg| {
            let (pat, ty) = typed(arg);
            let ty = if enums.repr_of(ty).is_some() { quote!(#ty) } else { enums.raw_type(ty) };
            quote! { #pat: #ty }
        });
        let args = sig.inputs.iter().map(|arg| {
            let (pat, ty) = typed(arg);
            match enums.repr_of(ty) {
                Some(repr) => quote! { #pat as #repr },
                None => quote! { #pat },
            }
        });
        let output = return_type(sig);
        let (output, convert) = match enums.repr_of_return(sig) {
            None => (output, quote! { raw }),
            Some(_) if output.to_string() == result.to_string() => {
                (output, quote! { #result::from_raw(raw).unwrap_or(#result::#unknown_result) })
            }
            Some(_) => panic!("{name} returns an enum other than {result}: teach the generator to convert it"),
        };
        let doc = format!(" Calls `{name}`; an error if the loaded library does not export it.");
        quote! {
            #[doc = #doc]
            ///
            /// # Safety
            /// The arguments must satisfy the contract the library documents for this function.
            #[inline]
            pub unsafe fn #name(&self, #(#params),*) -> Result<#output, LoadError> {
                match self.#name {
                    Some(entry_point) => {
                        // SAFETY: the pointer was resolved from the library under this symbol name
                        // and has its declared C signature (enums as their integers); the caller
                        // upholds the function's contract.
                        let raw = unsafe { entry_point(#(#args),*) };
                        Ok(#convert)
                    }
                    None => Err(LoadError::MissingSymbol(stringify!(#name))),
                }
            }
        }
    });
    let present = functions.iter().map(|sig| {
        let name = &sig.ident;
        quote! { (stringify!(#name), self.#name.is_some()), }
    });
    let count = functions.len();

    let free = lib.free_functions.as_ref().map(|free| {
        let loader = Ident::new(&format!("{}_library", free.loader), Span::call_site());
        let loaded = Ident::new(&format!("loaded_{}", free.loader), Span::call_site());
        let no_lib = Ident::new(free.no_library, Span::call_site());
        let no_symbol = Ident::new(free.no_symbol, Span::call_site());
        let wrappers = functions.iter().filter(|sig| return_type(sig).to_string() == result.to_string()).map(|sig| {
            let name = &sig.ident;
            let params = sig.inputs.iter().map(|arg| {
                let (pat, ty) = typed(arg);
                quote! { #pat: #ty }
            });
            // Out-pointers to enums go through an integer, checked before the caller's enum is
            // written; pointers the library only reads (`const`, or arrays of requests) are cast.
            let mut checks = Vec::new();
            let args: Vec<TokenStream> = sig
                .inputs
                .iter()
                .map(|arg| {
                    let (pat, ty) = typed(arg);
                    match enums.pointee_enum(ty) {
                        Some((false, enum_ty, repr)) if !ENUM_ARRAY_INPUTS.contains(&(name.to_string().as_str(), quote!(#pat).to_string().as_str())) => {
                            let raw = Ident::new(&format!("{}_raw", quote!(#pat)), Span::call_site());
                            checks.push((pat.clone(), raw.clone(), enum_ty, repr.clone()));
                            quote! { if #pat.is_null() { std::ptr::null_mut() } else { &mut #raw as *mut #repr } }
                        }
                        Some((_, _, repr)) => {
                            let mutability = if matches!(ty, syn::Type::Ptr(p) if p.mutability.is_some()) { quote!(*mut) } else { quote!(*const) };
                            quote! { #pat as #mutability #repr }
                        }
                        None => quote! { #pat },
                    }
                })
                .collect();
            let declare = checks.iter().map(|(pat, raw, _, repr)| {
                if ENUM_IN_OUT.contains(&(name.to_string().as_str(), quote!(#pat).to_string().as_str())) {
                    // SAFETY: for this parameter the caller passes a valid value to read, or null.
                    quote! { let mut #raw: #repr = if #pat.is_null() { 0 } else { unsafe { #pat.read() as #repr } }; }
                } else {
                    quote! { let mut #raw: #repr = 0; }
                }
            });
            let store = checks.iter().map(|(pat, raw, enum_ty, _)| {
                quote! {
                    if code == #result::#success && !#pat.is_null() {
                        match #enum_ty::from_raw(#raw) {
                            // SAFETY: the caller passed a valid out-pointer (it is not null).
                            Some(value) => unsafe { #pat.write(value) },
                            None => return #result::#unknown_result,
                        }
                    }
                }
            });
            let library = free.library;
            let doc = format!(
                " `{name}` through the process-wide {library}: `{no_lib}` when no {library} could be loaded, `{no_symbol}` when it lacks this function."
            );
            let safety = format!(" The arguments must satisfy the contract the {} documentation gives for this function.", free.documented_by);
            quote! {
                #[doc = #doc]
                ///
                /// # Safety
                #[doc = #safety]
                #[inline]
                pub unsafe fn #name(#(#params),*) -> #result {
                    let #loaded = match super::loader::#loader() {
                        Ok(#loaded) => #loaded,
                        Err(_) => return #result::#no_lib,
                    };
                    #(#declare)*
                    // SAFETY: forwarded (enum out-values through checked integers); the caller
                    // upholds the function's contract.
                    let code = match unsafe { #loaded.#name(#(#args),*) } {
                        Ok(code) => code,
                        Err(_) => return #result::#no_symbol,
                    };
                    #(#store)*
                    code
                }
            }
        });
        quote! { #(#wrappers)* }
    });

    let body = quote! {
        use super::loader::{resolve, LoadError};

        #(#types)*

        #conversions

        #(#names)*

        /// Entry points of the library, resolved once when it is loaded; `None` where it lacks one.
        pub struct #table {
            #(#fields)*
        }

        impl #table {
            /// Resolves every entry point in `library`; a missing one becomes `None`.
            ///
            /// # Safety
            /// `library` must be the library these declarations describe, so that each symbol has
            /// the declared signature, and it must stay loaded while the table is used.
            pub unsafe fn load(library: &libloading::Library) -> Self {
                // SAFETY: forwarded from this function's contract.
                unsafe {
                    Self { #(#resolves)* }
                }
            }

            /// Every entry point this table knows, with whether the loaded library exports it.
            pub fn entry_points(&self) -> [(&'static str, bool); #count] {
                [#(#present)*]
            }

            #(#methods)*
        }

        #free
    };
    let file: syn::File = syn::parse2(body).expect("generated code parses");
    format!(
        "// @generated by tools/regen-bindings (scripts/regen) from {} and {}.\n\
         // Do not edit: change the generator and run scripts/regen.\n\
         //! Generated bindings for {}.\n\
         #![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, dead_code, missing_docs)]\n\
         #![allow(unpredictable_function_pointer_comparisons)]\n\
         #![allow(clippy::all, clippy::undocumented_unsafe_blocks, unsafe_op_in_unsafe_fn)]\n\n{}",
        lib.wrapper,
        lib.headers,
        lib.what,
        prettyplease::unparse(&file)
    )
}

/// Pointer-to-enum parameters that are arrays the library reads, not out-values:
/// (function, parameter). Every other `*mut` enum is an out-value.
const ENUM_ARRAY_INPUTS: &[(&str, &str)] = &[
    ("cuLibraryLoadData", "jitOptions"),
    ("cuLibraryLoadData", "libraryOptions"),
    ("cuLibraryLoadFromFile", "jitOptions"),
    ("cuLibraryLoadFromFile", "libraryOptions"),
    ("cuLinkAddData_v2", "options"),
    ("cuLinkAddFile_v2", "options"),
    ("cuLinkCreate_v2", "options"),
    ("cuMemRangeGetAttributes", "attributes"),
    ("cuModuleLoadDataEx", "options"),
    ("cuPointerGetAttributes", "attributes"),
];

/// Pointer-to-enum parameters the library reads and then overwrites: (function, parameter).
const ENUM_IN_OUT: &[(&str, &str)] = &[("cuThreadExchangeStreamCaptureMode", "mode")];

/// The enums of one set of bindings, with the aliases that name them.
struct Enums {
    /// Enum name -> (integer representation, variants with their discriminants).
    enums: BTreeMap<String, (syn::Type, Vec<(Ident, syn::Expr)>)>,
    /// Every name of an enum (aliases included) -> the enum's name.
    names: BTreeMap<String, String>,
}

impl Enums {
    fn collect(items: &[syn::Item]) -> Self {
        let mut enums = BTreeMap::new();
        for item in items {
            if let syn::Item::Enum(e) = item {
                let repr = e
                    .attrs
                    .iter()
                    .find(|a| a.path().is_ident("repr"))
                    .map(|a| a.parse_args::<syn::Type>().expect("repr(int)"))
                    .unwrap_or_else(|| panic!("enum {} has no repr", e.ident));
                let variants = e
                    .variants
                    .iter()
                    .map(|v| {
                        let (_, discriminant) = v.discriminant.clone().expect("bindgen writes every discriminant");
                        (v.ident.clone(), discriminant)
                    })
                    .collect();
                enums.insert(e.ident.to_string(), (repr, variants));
            }
        }
        let mut names: BTreeMap<String, String> = enums.keys().map(|k| (k.clone(), k.clone())).collect();
        // `pub use self::X as Y;` and `pub type Y = X;`, possibly chained.
        let aliases: Vec<(String, String)> = items
            .iter()
            .filter_map(|item| match item {
                syn::Item::Use(u) => match &u.tree {
                    syn::UseTree::Path(p) => match &*p.tree {
                        syn::UseTree::Rename(r) => Some((r.rename.to_string(), r.ident.to_string())),
                        _ => None,
                    },
                    _ => None,
                },
                syn::Item::Type(t) => match &*t.ty {
                    syn::Type::Path(p) => p.path.get_ident().map(|target| (t.ident.to_string(), target.to_string())),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        loop {
            let before = names.len();
            for (alias, target) in &aliases {
                if let Some(e) = names.get(target).cloned() {
                    names.entry(alias.clone()).or_insert(e);
                }
            }
            if names.len() == before {
                break;
            }
        }
        Enums { enums, names }
    }

    /// The integer representation when `ty` names an enum.
    fn repr_of(&self, ty: &syn::Type) -> Option<&syn::Type> {
        let syn::Type::Path(p) = ty else { return None };
        let name = self.names.get(&p.path.get_ident()?.to_string())?;
        Some(&self.enums[name].0)
    }

    fn repr_of_return(&self, sig: &syn::Signature) -> Option<&syn::Type> {
        match &sig.output {
            syn::ReturnType::Type(_, ty) => self.repr_of(ty),
            syn::ReturnType::Default => None,
        }
    }

    /// For a pointer to an enum: (is const, the pointee as written, its integer representation).
    fn pointee_enum(&self, ty: &syn::Type) -> Option<(bool, syn::Type, syn::Type)> {
        let syn::Type::Ptr(p) = ty else { return None };
        let repr = self.repr_of(&p.elem)?.clone();
        Some((p.const_token.is_some(), (*p.elem).clone(), repr))
    }

    /// `ty` with enums, and pointers to enums, replaced by their integer representation.
    fn raw_type(&self, ty: &syn::Type) -> TokenStream {
        if let Some(repr) = self.repr_of(ty) {
            return quote!(#repr);
        }
        match self.pointee_enum(ty) {
            Some((true, _, repr)) => quote!(*const #repr),
            Some((false, _, repr)) => quote!(*mut #repr),
            None => quote!(#ty),
        }
    }

    /// The C signature as it crosses the boundary: enums as integers.
    fn fn_pointer_type(&self, sig: &syn::Signature) -> TokenStream {
        let inputs = sig.inputs.iter().map(|arg| self.raw_type(typed(arg).1));
        let output = match &sig.output {
            syn::ReturnType::Default => quote! { () },
            syn::ReturnType::Type(_, ty) => self.raw_type(ty),
        };
        quote! { unsafe extern "C" fn(#(#inputs),*) -> #output }
    }

    /// `from_raw` for every enum: the checked way in from an integer the library produced.
    fn conversions(&self) -> TokenStream {
        let impls = self.enums.iter().map(|(name, (repr, variants))| {
            let ty = Ident::new(name, Span::call_site());
            let arms = variants.iter().map(|(v, d)| quote! { #d => Some(Self::#v), });
            quote! {
                impl #ty {
                    /// The variant with this value, or `None` for a value these bindings do not
                    /// know (from a newer library): the checked conversion at the FFI boundary.
                    pub const fn from_raw(raw: #repr) -> Option<Self> {
                        match raw {
                            #(#arms)*
                            _ => None,
                        }
                    }
                }
            }
        });
        quote! { #(#impls)* }
    }

    /// `impl Enum { pub fn name(self) -> &'static str }`: the variant's name.
    fn name_method(&self, enum_name: &str) -> TokenStream {
        let (_, variants) = self.enums.get(enum_name).unwrap_or_else(|| panic!("no enum {enum_name}"));
        let ty = Ident::new(enum_name, Span::call_site());
        let arms = variants.iter().map(|(v, _)| quote! { Self::#v => stringify!(#v), });
        quote! {
            impl #ty {
                /// The name of this value's variant (`"CUDA_ERROR_OUT_OF_MEMORY"`).
                pub const fn name(self) -> &'static str {
                    match self {
                        #(#arms)*
                    }
                }
            }
        }
    }
}

fn typed(arg: &syn::FnArg) -> (&syn::Pat, &syn::Type) {
    match arg {
        syn::FnArg::Typed(t) => (&t.pat, &t.ty),
        syn::FnArg::Receiver(_) => unreachable!("extern functions take no self"),
    }
}

fn return_type(sig: &syn::Signature) -> TokenStream {
    match &sig.output {
        syn::ReturnType::Default => quote! { () },
        syn::ReturnType::Type(_, ty) => quote! { #ty },
    }
}
