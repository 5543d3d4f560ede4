#!/bin/bash
#
# devstack/plugin.sh: the devstack entry point of iotguard; a dispatcher,
# the work is in devstack/lib/iotguard.
#
# Enable it in local.conf:
#   enable_plugin iotguard https://opendev.org/openstack/iotguard
#   enable_service iotguard-api iotguard-controller

source $IOTGUARD_DIR/devstack/lib/iotguard

if is_service_enabled iotguard-api iotguard-controller iotguard-agent; then
    if [[ "$1" == "stack" && "$2" == "install" ]]; then
        echo_summary "Installing iotguard"
        install_iotguard
    elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
        echo_summary "Configuring iotguard"
        configure_iotguard
        if is_service_enabled iotguard-api; then
            create_iotguard_accounts
        fi
        if is_iotguard_central; then
            init_iotguard
        fi
    elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
        echo_summary "Starting iotguard"
        start_iotguard
        if is_service_enabled iotguard-api; then
            create_iotguard_tiers
            set_iotguard_domain_profiles
            # Without Cinder, sync would find no volume types to make.
            if [[ "$IOTGUARD_SYNC_TIERS" == "True" ]] && \
                    is_service_enabled c-api; then
                sync_iotguard_tiers
            fi
        fi
    elif [[ "$1" == "stack" && "$2" == "test-config" ]]; then
        if is_service_enabled tempest && is_iotguard_central; then
            echo_summary "Configuring tempest for iotguard"
            configure_tempest_for_iotguard
        fi
    fi

    if [[ "$1" == "unstack" ]]; then
        echo_summary "Stopping iotguard"
        stop_iotguard
    fi

    if [[ "$1" == "clean" ]]; then
        echo_summary "Cleaning iotguard"
        cleanup_iotguard
    fi
fi

# The Horizon panels (iotguard-dashboard/), wherever Horizon runs: its node
# need not run an iotguard service. Installed before devstack's
# init_horizon, whose collectstatic and compress then include them. Its
# settings snippet (local_settings.d/) names the plugin's customization
# module: "Change I/O tier" in the Instances table.
if is_service_enabled horizon && [[ "${IOTGUARD_DASHBOARD:-True}" == "True" ]]; then
    IOTGUARD_ENABLED_FILES="_89_iotguard_dashboard.py _90_project_iotguard_disks.py _91_admin_iotguard.py"
    IOTGUARD_SETTINGS_SNIPPET=_90_iotguard_dashboard.py
    IOTGUARD_HORIZON_LOCAL=$HORIZON_DIR/openstack_dashboard/local
    if [[ "$1" == "stack" && "$2" == "install" ]]; then
        echo_summary "Installing the iotguard dashboard"
        setup_develop $IOTGUARD_DIR/iotguard-dashboard
    elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
        for file in $IOTGUARD_ENABLED_FILES; do
            cp $IOTGUARD_DIR/iotguard-dashboard/iotguard_dashboard/enabled/$file \
                $IOTGUARD_HORIZON_LOCAL/enabled/
        done
        mkdir -p $IOTGUARD_HORIZON_LOCAL/local_settings.d
        cp $IOTGUARD_DIR/iotguard-dashboard/iotguard_dashboard/local_settings.d/$IOTGUARD_SETTINGS_SNIPPET \
            $IOTGUARD_HORIZON_LOCAL/local_settings.d/
    elif [[ "$1" == "clean" ]]; then
        for file in $IOTGUARD_ENABLED_FILES; do
            rm -f $IOTGUARD_HORIZON_LOCAL/enabled/$file
        done
        rm -f $IOTGUARD_HORIZON_LOCAL/local_settings.d/$IOTGUARD_SETTINGS_SNIPPET
    fi
fi
