// SPDX-License-Identifier: MIT
// rofctl region list|show|create|delete|token.
#include "commands.h"

namespace rofctl {
namespace {

struct RegionOpts {
    std::string name, tenant, size, access;
    std::vector<std::string> freelists;
    bool force = false;
    std::uint32_t ttl_ms = 0;
    std::string output;  // list -o
};

// "T/NAME" names a region of tenant T; --tenant says the same.
void split_name(RegionOpts& o) {
    const auto slash = o.name.find('/');
    if (slash == std::string::npos) {
        return;
    }
    const std::string tenant = o.name.substr(0, slash);
    if (!o.tenant.empty() && o.tenant != tenant) {
        throw UsageError("\"" + o.name + "\" and --tenant " + o.tenant + " disagree");
    }
    o.tenant = tenant;
    o.name = o.name.substr(slash + 1);
}

rof::v1::FreeList parse_freelist(const std::string& text) {
    const auto a = text.find(':');
    const auto b = a == std::string::npos ? a : text.find(':', a + 1);
    if (b == std::string::npos) {
        throw UsageError("--freelist \"" + text + "\": want BLOCK_SIZE:OFFSET:COUNT");
    }
    rof::v1::FreeList f;
    try {
        f.set_block_size(static_cast<std::uint32_t>(parse_size(text.substr(0, a))));
        f.set_offset(parse_size(text.substr(a + 1, b - a - 1)));
        f.set_count(static_cast<std::uint32_t>(std::stoul(text.substr(b + 1))));
    } catch (const std::logic_error&) {
        throw UsageError("--freelist \"" + text + "\": want BLOCK_SIZE:OFFSET:COUNT");
    }
    return f;
}

}  // namespace

void add_region_commands(CLI::App& app, Handler& selected) {
    auto* obj = app.add_subcommand("region", "registered memory regions of tenants");
    obj->require_subcommand(0, 1);
    auto o = std::make_shared<RegionOpts>();
    const char* tenant_help = "the region's tenant (default: the caller's own)";

    auto* list = obj->add_subcommand("list", "list regions the caller may see");
    list->add_option("--tenant", o->tenant, "only this tenant's");
    add_output_option(*list, o->output);
    list->callback([&selected, o] {
        selected = [o](Context& ctx) {
            ctx.printer.set_wide(o->output == "wide");
            rof::v1::ListRegionsRequest req;
            req.set_tenant(o->tenant);
            ctx.printer.print(ctx.client().list_regions(req));
            return exit_ok;
        };
    });

    auto* show = obj->add_subcommand("show", "one region: NAME or TENANT/NAME");
    show->add_option("name", o->name, "region name, or TENANT/NAME")->required();
    show->add_option("--tenant", o->tenant, tenant_help);
    show->callback([&selected, o] {
        selected = [o](Context& ctx) {
            split_name(*o);
            rof::v1::GetRegionRequest req;
            req.set_tenant(o->tenant);
            req.set_name(o->name);
            ctx.printer.print(ctx.client().get_region(req));
            return exit_ok;
        };
    });

    auto* create = obj->add_subcommand("create", "create a region (kept by rofd across restarts)");
    create->add_option("name", o->name, "region name, or TENANT/NAME")->required();
    create->add_option("--size", o->size, "bytes, a multiple of 4096 (65536, 64KiB, 16MiB)")
        ->required();
    create->add_option("--access", o->access, "r, rw, rwa (read, write, atomic)")->required();
    create->add_option("--tenant", o->tenant, tenant_help);
    create->add_option("--freelist", o->freelists,
                       "BLOCK_SIZE:OFFSET:COUNT, a free list in the region (repeatable)");
    create->callback([&selected, o] {
        selected = [o](Context& ctx) {
            split_name(*o);
            rof::v1::CreateRegionRequest req;
            req.set_tenant(o->tenant);
            req.set_name(o->name);
            req.set_size(parse_size(o->size));
            req.set_access(parse_access(o->access));
            for (const std::string& f : o->freelists) {
                *req.add_freelists() = parse_freelist(f);
            }
            ctx.printer.print(ctx.client().create_region(req));
            return exit_ok;
        };
    });

    auto* del = obj->add_subcommand("delete", "delete a region made by `region create`");
    del->add_option("name", o->name, "region name, or TENANT/NAME")->required();
    del->add_option("--tenant", o->tenant, tenant_help);
    del->add_flag("--force", o->force, "also revoke the sessions and programs using it");
    del->callback([&selected, o] {
        selected = [o](Context& ctx) {
            split_name(*o);
            rof::v1::DeleteRegionRequest req;
            req.set_tenant(o->tenant);
            req.set_name(o->name);
            req.set_force(o->force);
            ctx.client().delete_region(req);
            rof::v1::GetRegionRequest gone;  // what was deleted, for the output
            gone.set_tenant(o->tenant);
            gone.set_name(o->name);
            ctx.printer.print(gone);
            return exit_ok;
        };
    });

    auto* token = obj->add_subcommand("token", "a one-time token to mmap the region locally");
    token->add_option("name", o->name, "region name, or TENANT/NAME")->required();
    token->add_option("--access", o->access, "r or rw")->required();
    token->add_option("--tenant", o->tenant, tenant_help);
    token->add_option(
        "--ttl", o->ttl_ms,
        "the token's lifetime in ms (default " + std::to_string(ROF_TOKEN_TTL_DEFAULT_MS) + ")");
    token->callback([&selected, o] {
        selected = [o](Context& ctx) {
            split_name(*o);
            const std::uint32_t access = parse_access(o->access);
            if ((access & rof::v1::ACCESS_ATOMIC) != 0) {
                throw UsageError("region token --access: r or rw");
            }
            rof::v1::CreateRegionTokenRequest req;
            req.set_tenant(o->tenant);
            req.set_name(o->name);
            req.set_access(access);
            req.set_ttl_ms(o->ttl_ms);
            ctx.printer.print(ctx.client().create_region_token(req));
            return exit_ok;
        };
    });
}

}  // namespace rofctl
