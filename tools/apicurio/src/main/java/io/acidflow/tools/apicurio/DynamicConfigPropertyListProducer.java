package io.acidflow.tools.apicurio;

import io.apicurio.common.apps.config.DynamicConfigPropertyList;
import java.util.List;
import javax.enterprise.context.ApplicationScoped;
import javax.enterprise.inject.Produces;
import javax.inject.Singleton;

/**
 * The bean that Apicurio's config-index Quarkus extension builds at augmentation time (the list
 * of properties that can be changed at run time): the extension's deployment module
 * (io.apicurio:apicurio-common-app-components-config-index-deployment) is not on Maven Central,
 * so tools/apicurio/pom.xml leaves the extension out and this producer stands in for it with an
 * empty list (no dynamic configuration; the registry's static configuration is unaffected).
 */
@ApplicationScoped
public class DynamicConfigPropertyListProducer {
    @Produces
    @Singleton
    DynamicConfigPropertyList dynamicConfigPropertyList() {
        return new DynamicConfigPropertyList(List.of());
    }
}
